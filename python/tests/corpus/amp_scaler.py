"""Mixed precision with torch.amp.GradScaler (fp16 autocast on the CPU): unscale_ + clipping before the step,
a ChainedScheduler. The initial scale is high, so the first iterations' gradients overflow and the scaler
skips those updates, halving its scale each time (printed, so a reader can tell the skipped ones)."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x):
        return self.layers(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--init-scale", type=float, default=2.0 ** 24)
    args = p.parse_args()
    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(320, 16), torch.randint(0, 4, (320,)))
    loader = DataLoader(ds, batch_size=32, shuffle=True)
    model = MLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.ChainedScheduler([
        torch.optim.lr_scheduler.ConstantLR(optimizer, factor=0.5, total_iters=3),
        torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.97)])
    scaler = torch.amp.GradScaler("cpu", init_scale=args.init_scale)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        for i, (x, y) in enumerate(loader):
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type="cpu", dtype=torch.float16):
                loss = criterion(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            print(f"epoch {epoch} iter {i} loss {loss.item()!r} scale {scaler.get_scale()!r}")


if __name__ == "__main__":
    main()
