"""A run whose loss blows up (the learning rate is far too high): the script's own check raises."""
import argparse
import math

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lr", type=float, default=2.0)
    args = p.parse_args()
    torch.manual_seed(0)
    x = torch.randn(256, 4) * 10
    loader = DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=16)
    model = nn.Sequential(nn.Linear(4, 16), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for epoch in range(3):
        for i, (inputs, targets) in enumerate(loader):
            loss = nn.functional.mse_loss(model(inputs), targets)
            if not math.isfinite(loss.item()):
                raise FloatingPointError(f"loss is {loss.item()} at epoch {epoch} iteration {i}")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"epoch {epoch} iter {i} loss {loss.item()!r}")


if __name__ == "__main__":
    main()
