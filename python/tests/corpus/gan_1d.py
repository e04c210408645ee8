"""A GAN in a few lines, without a DataLoader: real samples are drawn from a Gaussian every iteration, the
discriminator steps on a real and a (detached) generated batch, then the generator steps through the
discriminator. Two optimizers, one iteration each per loop, the discriminator run again on the generator's
output after it has stepped."""
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--iterations", type=int, default=12)
parser.add_argument("--minibatch", type=int, default=32)
parser.add_argument("--hidden", type=int, default=8)
args = parser.parse_args()
torch.manual_seed(5)

data_mean, data_stddev = 4.0, 1.25


def get_distribution_sampler(mu, sigma):
    return lambda n: torch.Tensor(n, 1).normal_(mu, sigma)


def get_generator_input_sampler():
    return lambda n: torch.rand(n, 1)


class Generator(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(Generator, self).__init__()
        self.map1 = nn.Linear(input_size, hidden_size)
        self.map2 = nn.Linear(hidden_size, hidden_size)
        self.map3 = nn.Linear(hidden_size, output_size)
        self.f = torch.tanh

    def forward(self, x):
        x = self.map1(x)
        x = self.f(x)
        x = self.map2(x)
        x = self.f(x)
        return self.map3(x)


class Discriminator(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(Discriminator, self).__init__()
        self.map1 = nn.Linear(input_size, hidden_size)
        self.map2 = nn.Linear(hidden_size, hidden_size)
        self.map3 = nn.Linear(hidden_size, output_size)
        self.f = torch.sigmoid

    def forward(self, x):
        x = self.f(self.map1(x))
        x = self.f(self.map2(x))
        return self.f(self.map3(x))


d_sampler = get_distribution_sampler(data_mean, data_stddev)
gi_sampler = get_generator_input_sampler()
G = Generator(1, args.hidden, 1)
D = Discriminator(1, args.hidden, 1)
criterion = nn.BCELoss()
d_optimizer = torch.optim.SGD(D.parameters(), lr=1e-3, momentum=0.9)
g_optimizer = torch.optim.SGD(G.parameters(), lr=1e-3, momentum=0.9)

for epoch in range(args.iterations):
    # 1. Train D on real+fake
    D.zero_grad()
    d_real_data = d_sampler(args.minibatch)
    d_real_decision = D(d_real_data)
    d_real_error = criterion(d_real_decision, torch.ones(args.minibatch, 1))
    d_real_error.backward()
    d_gen_input = gi_sampler(args.minibatch)
    d_fake_data = G(d_gen_input).detach()  # detach to avoid training G on these labels
    d_fake_decision = D(d_fake_data)
    d_fake_error = criterion(d_fake_decision, torch.zeros(args.minibatch, 1))
    d_fake_error.backward()
    d_optimizer.step()  # only optimizes D's parameters; changes based on stored gradients from backward()

    # 2. Train G on D's response (but DO NOT train D on these labels)
    G.zero_grad()
    gen_input = gi_sampler(args.minibatch)
    g_fake_data = G(gen_input)
    dg_fake_decision = D(g_fake_data)
    g_error = criterion(dg_fake_decision, torch.ones(args.minibatch, 1))  # train G to pretend it's genuine
    g_error.backward()
    g_optimizer.step()  # only optimizes G's parameters
    print("Epoch %d: D (%r real_err, %r fake_err) G (%r err)" % (
        epoch, d_real_error.item(), d_fake_error.item(), g_error.item()))
