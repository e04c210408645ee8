"""DCGAN-style loop: per batch, the discriminator's optimizer steps, then the generator's; LambdaLR decay on
both; the generator is sampled under no_grad at the end of each epoch."""
import argparse
import random

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--nz", type=int, default=8)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("--manual-seed", type=int, default=999)
opt = parser.parse_args()
random.seed(opt.manual_seed)
torch.manual_seed(opt.manual_seed)


class Generator(nn.Module):
    def __init__(self, nz):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(nz, 64), nn.BatchNorm1d(64), nn.ReLU(True), nn.Linear(64, 2 * 8 * 8),
                                  nn.Tanh())

    def forward(self, z):
        return self.main(z).view(-1, 2, 8, 8)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Flatten(), nn.Linear(2 * 8 * 8, 64), nn.LeakyReLU(0.2, inplace=True),
                                  nn.Linear(64, 1), nn.Sigmoid())

    def forward(self, x):
        return self.main(x).view(-1)


real_images = torch.tanh(torch.randn(160, 2, 8, 8))
dataloader = DataLoader(TensorDataset(real_images), batch_size=opt.batch_size, shuffle=True, drop_last=True)
netG, netD = Generator(opt.nz), Discriminator()
criterion = nn.BCELoss()
fixed_noise = torch.randn(4, opt.nz)
optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
schedD = torch.optim.lr_scheduler.LambdaLR(optimizerD, lambda e: 0.9 ** e)
schedG = torch.optim.lr_scheduler.LambdaLR(optimizerG, lambda e: 0.9 ** e)

for epoch in range(opt.epochs):
    for i, (real,) in enumerate(dataloader):
        # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        b = real.size(0)
        label = torch.full((b,), 1.0)
        errD_real = criterion(netD(real), label)
        errD_real.backward()
        noise = torch.randn(b, opt.nz)
        fake = netG(noise)
        label.fill_(0.0)
        errD_fake = criterion(netD(fake.detach()), label)
        errD_fake.backward()
        optimizerD.step()
        # (2) Update G: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(1.0)
        errG = criterion(netD(fake), label)
        errG.backward()
        optimizerG.step()
        print(f"[{epoch}/{opt.epochs}][{i}/{len(dataloader)}] Loss_D: {(errD_real + errD_fake).item()!r} "
              f"Loss_G: {errG.item()!r}")
    schedD.step()
    schedG.step()
    with torch.no_grad():
        samples = netG(fixed_noise)
    print(f"epoch {epoch} sample mean {samples.mean().item()!r}")
