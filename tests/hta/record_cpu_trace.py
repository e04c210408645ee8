#!/usr/bin/env python3
"""Records a PyTorch-profiler (Kineto) trace of a few CPU training steps of a tiny model: the trace the HTA
comparison records at test time, so that a trace from the torch in use is checked, not only stored ones.

usage: record_cpu_trace.py OUT.json
A schedule (wait 1, warmup 1, active 4) gives ProfilerStep#2..#5 ranges; one intra-op thread keeps the
recording the same shape on any CPU."""
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule


def main(out):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=4),
                 on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
        for _ in range(6):
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            prof.step()


if __name__ == "__main__":
    main(sys.argv[1])
