"""An image-folder script: torchvision ImageFolder + transforms, DataLoader workers started with the spawn
context (persistent), CosineAnnealingLR, everything under the __main__ guard the spawn context needs."""
import argparse

import torch
import torch.nn as nn
import torch.multiprocessing as mp
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class TinyNet(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2)
        self.head = nn.Linear(8, classes)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)).mean(dim=(2, 3)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    torch.manual_seed(0)
    tf = transforms.Compose([transforms.Resize(16), transforms.ToTensor(),
                             transforms.Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25])])
    ds = datasets.ImageFolder(args.data, transform=tf)
    loader = DataLoader(ds, batch_size=8, shuffle=True, num_workers=args.workers, persistent_workers=args.workers > 0,
                        multiprocessing_context=mp.get_context("spawn") if args.workers else None)
    model = TinyNet(len(ds.classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs * len(loader))
    for epoch in range(args.epochs):
        for i, (images, labels) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            print(f"epoch {epoch} iter {i} loss {loss.item()!r}")


if __name__ == "__main__":
    main()
