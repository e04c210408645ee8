"""Hogwild: the model lives in shared memory (model.share_memory()) and torch.multiprocessing Process children,
started with 'spawn', train it at once without locks, each with its own DataLoader and SGD; the parent only
starts them, waits, and tests the model at the end. Synthetic 12x12 digits stand in for MNIST."""
import argparse

import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser(description='PyTorch Hogwild Example')
parser.add_argument('--batch-size', type=int, default=16)
parser.add_argument('--test-batch-size', type=int, default=64)
parser.add_argument('--epochs', type=int, default=2)
parser.add_argument('--lr', type=float, default=0.01)
parser.add_argument('--momentum', type=float, default=0.5)
parser.add_argument('--seed', type=int, default=1)
parser.add_argument('--log-interval', type=int, default=1)
parser.add_argument('--num-processes', type=int, default=2)
parser.add_argument('--samples', type=int, default=96)


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=3)
        self.fc1 = nn.Linear(4 * 5 * 5, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = x.view(-1, 4 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def digits(n, seed):
    gen = torch.Generator().manual_seed(seed)
    protos = torch.rand(10, 1, 12, 12, generator=torch.Generator().manual_seed(0))
    y = torch.randint(0, 10, (n,), generator=gen)
    return TensorDataset(protos[y] + 0.3 * torch.randn(n, 1, 12, 12, generator=gen), y)


def train(rank, args, model, dataset, kwargs):
    torch.manual_seed(args.seed + rank)
    train_loader = DataLoader(dataset, **kwargs)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    for epoch in range(1, args.epochs + 1):
        train_epoch(rank, epoch, args, model, train_loader, optimizer)


def train_epoch(rank, epoch, args, model, data_loader, optimizer):
    model.train()
    for batch_idx, (data, target) in enumerate(data_loader):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('{}\tTrain Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                rank, epoch, batch_idx * len(data), len(data_loader.dataset),
                100. * batch_idx / len(data_loader), loss.item()))


def test(args, model, dataset, kwargs):
    model.eval()
    test_loader = DataLoader(dataset, batch_size=args.test_batch_size)
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()
            pred = output.max(1)[1]
            correct += pred.eq(target).sum().item()
    test_loss /= len(test_loader.dataset)
    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset), 100. * correct / len(test_loader.dataset)))


if __name__ == '__main__':
    args = parser.parse_args()
    dataset1 = digits(args.samples, 1)
    dataset2 = digits(args.samples, 2)
    kwargs = {'batch_size': args.batch_size, 'shuffle': True}
    torch.manual_seed(args.seed)
    mp.set_start_method('spawn', force=True)
    model = Net()
    model.share_memory()  # gradients are allocated lazily, so they are not shared here
    processes = []
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, model, dataset1, kwargs))
        # We first train the model across `num_processes` processes
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
    # Once training is complete, we can test the model
    test(args, model, dataset2, kwargs)
