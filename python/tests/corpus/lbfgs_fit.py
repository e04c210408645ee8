"""Full-batch curve fitting with LBFGS and a closure, no DataLoader; the optimizer is built in a function."""
import argparse

import torch
from torch import nn


def build_optimizer(model, lr):
    return torch.optim.LBFGS(model.parameters(), lr=lr, max_iter=4, history_size=10)


class Poly(nn.Module):
    def __init__(self, degree):
        super().__init__()
        self.coef = nn.Parameter(torch.zeros(degree + 1))

    def forward(self, x):
        powers = torch.stack([x ** k for k in range(self.coef.numel())], dim=-1)
        return powers @ self.coef


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.5)
    args = p.parse_args()
    torch.manual_seed(3)
    x = torch.linspace(-1, 1, 200)
    y = torch.sin(3 * x) + 0.05 * torch.randn(200)
    model = Poly(5)
    optimizer = build_optimizer(model, args.lr)
    mse = nn.MSELoss()

    def closure():
        optimizer.zero_grad()
        loss = mse(model(x), y)
        loss.backward()
        return loss

    for step in range(args.steps):
        loss = optimizer.step(closure)
        print(f"step {step} loss {loss.item()!r}")


if __name__ == "__main__":
    main()
