#!/usr/bin/env python3
"""The mnist_cnn training loop (PyTorch's MNIST example network) in PyTorch eager mode, on synthetic data.

The same loop the engine runs with its default knobs (what a newcomer writes): AdamW with the per-parameter
loop (foreach=False), zero_grad() filling zeros, loss.item() every step, one batch made once (synthetic).
Prints one JSON line: {"samples_per_s": median over measured steps, ...}.
With --compile the model is torch.compile'd (inductor; its compilation happens in the warm-up steps).
Run with the project's environment: $(scripts/python-env.sh --existing) bench/mnist_eager.py --steps 60 --batch 64
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--compile", action="store_true")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = Net()
    model.train()
    fwd = torch.compile(model) if args.compile else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=False)
    x = torch.randn(args.batch, 1, 28, 28)
    y = torch.randint(0, 10, (args.batch,))
    rates = []
    for step in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        out = fwd(x)
        loss = F.nll_loss(out, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
        loss.item()
        dt = time.perf_counter() - t0
        if step >= args.warmup:
            rates.append(args.batch / dt)
    print(json.dumps({"samples_per_s": statistics.median(rates), "steps": args.steps, "batch": args.batch,
                      "threads": torch.get_num_threads(), "torch": torch.__version__, "compiled": args.compile}))


if __name__ == "__main__":
    main()
