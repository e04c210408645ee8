"""No torch.optim and no DataLoader: mini-batches sliced from tensors, a hand-written SGD update after
backward(), validation under no_grad each epoch, the weights saved at the end."""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 32)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=24)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--out", default=".")
    args = p.parse_args()
    torch.manual_seed(7)
    x, y = torch.randn(240, 20), torch.randint(0, 3, (240,))
    xv, yv = torch.randn(96, 20), torch.randint(0, 3, (96,))
    model = TwoLayer()
    for epoch in range(args.epochs):
        perm = torch.randperm(len(x))
        for it, start in enumerate(range(0, len(x), args.batch)):
            idx = perm[start:start + args.batch]
            loss = F.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            with torch.no_grad():
                for param in model.parameters():
                    param -= args.lr * param.grad
                    param.grad = None
            print(f"epoch {epoch} it {it} loss {loss.item()!r}")
        with torch.no_grad():
            val = F.cross_entropy(model(xv), yv).item()
        print(f"epoch {epoch} val {val!r}")
    torch.save(model.state_dict(), os.path.join(args.out, "weights.pt"))


if __name__ == "__main__":
    main()
