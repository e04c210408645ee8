"""MNIST-example shape with a OneCycleLR stepped every batch, gradient clipping, a tqdm bar and
sys.exit(main())."""
import argparse
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(8 * 13 * 13, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = self.dropout(torch.flatten(x, 1))
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


def train(model, loader, optimizer, scheduler, epoch, clip):
    model.train()
    for batch_idx, (data, target) in enumerate(tqdm(loader, desc=f"epoch {epoch}")):
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        scheduler.step()
        print(f"Train Epoch: {epoch} [{batch_idx}] Loss: {loss.item()!r} lr {scheduler.get_last_lr()[0]!r}")


def test(model, loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            correct += output.argmax(dim=1).eq(target).sum().item()
    print(f"Test set: Average loss: {test_loss / len(loader.dataset)!r}, Accuracy: {correct}/{len(loader.dataset)}")


def main():
    parser = argparse.ArgumentParser(description="PyTorch MNIST-style example")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--clip", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    train_set = TensorDataset(torch.randn(192, 1, 28, 28), torch.randint(0, 10, (192,)))
    test_set = TensorDataset(torch.randn(256, 1, 28, 28), torch.randint(0, 10, (256,)))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=128)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs,
                                                    steps_per_epoch=len(train_loader))
    for epoch in range(1, args.epochs + 1):
        train(model, train_loader, optimizer, scheduler, epoch, args.clip)
        test(model, test_loader)
    return 0


if __name__ == "__main__":
    sys.exit(main())
