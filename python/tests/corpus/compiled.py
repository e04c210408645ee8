"""model = torch.compile(model) on a tiny MLP (TorchInductor by default; on the CPU it builds C++ kernels)."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 2))

    def forward(self, x):
        return self.net(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--backend", default="inductor")
    args = p.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(96, 8), torch.randint(0, 2, (96,))), batch_size=16)
    model = torch.compile(MLP(), backend=args.backend)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        for i, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"epoch {epoch} iter {i} loss {loss.item().hex()}")


if __name__ == "__main__":
    main()
