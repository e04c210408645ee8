#!/usr/bin/env python3
"""A training script shaped like a synthetic-data benchmark (not run in CI; scripts/gpu-check.sh's `memory`
stage): torchvision's ResNet-18 on batches made on the GPU, SGD with momentum, a step scheduler. It reads
torch.cuda.max_memory_allocated() itself after each backward and each optimizer step (the launcher resets the
peak at each step's end, so the larger of the two is the step's own peak) and prints the largest it saw,
`script_peak_bytes N`, at exit: the launcher's own figure (`run --json`'s memory.device_step_peak) must agree.
With a batch too big for the device it ends in CUDA's out-of-memory error, which the launcher must explain.

usage: gpu_memory_script.py [--batch 64] [--steps 40] [--size 224]
"""

import argparse
import atexit

import torch
import torch.nn.functional as F
import torchvision

p = argparse.ArgumentParser()
p.add_argument("--batch", type=int, default=64)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--size", type=int, default=224)
args = p.parse_args()

dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torchvision.models.resnet18(num_classes=100).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
seen = [0]


def peak():
    if dev.type == "cuda":
        seen[0] = max(seen[0], torch.cuda.max_memory_allocated(dev))


atexit.register(lambda: print("script_peak_bytes %d" % seen[0], flush=True))
for step in range(args.steps):
    x = torch.randn(args.batch, 3, args.size, args.size, device=dev)
    y = torch.randint(0, 100, (args.batch,), device=dev)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    peak()
    opt.step()
    sched.step()
    peak()
    if step % 10 == 0:
        print("step %d loss %.3f" % (step, loss.item()), flush=True)
