"""A Trainer class that builds its optimizer in a method, accumulates gradients over 4 batches, steps a
ReduceLROnPlateau with the validation loss, and exits with 3 when the target is not reached."""
import argparse
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(nn.Module):
    def __init__(self, d_in, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


class Trainer:
    def __init__(self, model, args):
        self.model = model
        self.args = args
        self.optimizer, self.scheduler = self.configure_optimizers()
        self.loss_fn = nn.MSELoss()

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.model.parameters(), lr=self.args.lr, weight_decay=0.01)
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=0)
        return opt, sched

    def fit_epoch(self, loader, epoch):
        self.model.train()
        self.optimizer.zero_grad()
        for i, (x, y) in enumerate(loader):
            loss = self.loss_fn(self.model(x), y) / self.args.accum
            loss.backward()
            if (i + 1) % self.args.accum == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
            print(f"epoch {epoch} batch {i} loss {loss.item()!r}")

    @torch.no_grad()
    def evaluate(self, loader):
        self.model.eval()
        total = sum(self.loss_fn(self.model(x), y).item() * len(x) for x, y in loader)
        return total / len(loader.dataset)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--accum", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--target", type=float, default=1e-4)
    p.add_argument("--timing", action="store_true", help="print the time per training batch on stderr")
    args = p.parse_args()
    torch.manual_seed(42)
    w = torch.randn(12)
    xs = torch.randn(256, 12)
    ys = xs @ w + 0.1 * torch.randn(256)
    train_loader = DataLoader(TensorDataset(xs[:192], ys[:192]), batch_size=8, shuffle=True)
    val_loader = DataLoader(TensorDataset(xs[192:], ys[192:]), batch_size=32)
    trainer = Trainer(Regressor(12, 32), args)
    val = float("inf")
    train_time, batches = 0.0, 0
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        trainer.fit_epoch(train_loader, epoch)
        train_time += time.perf_counter() - t0
        batches += len(train_loader)
        val = trainer.evaluate(val_loader)
        trainer.scheduler.step(val)
        print(f"epoch {epoch} val {val!r} lr {trainer.optimizer.param_groups[0]['lr']!r}")
    if args.timing:
        print(f"{1e6 * train_time / batches:.1f} us per training batch", file=sys.stderr)
    if val > args.target:
        print("target not reached")
        sys.exit(3)


if __name__ == "__main__":
    main()
