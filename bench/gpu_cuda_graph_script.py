#!/usr/bin/env python3
"""A tiny training step in a CUDA graph, two ways (not run in CI; scripts/gpu-check.sh's `graphs` stage):
`--mode once` captures forward, backward and the optimizer step once with static input tensors and replays the
graph every step, copying each batch into them; `--mode recapture` captures and instantiates a new graph in every
step before replaying it, the mistake the analysis's cuda_graph_recapture finding names. With `--trace PATH` it
records the measured steps with torch.profiler (one ProfilerStep each) and writes the Kineto trace there, which
`tunebench-cli analyze PATH` reads: the graph's replays and nodes, and for `recapture` the finding.
It prints `samples/s N` over the measured steps (the profiled ones when tracing).

usage: gpu_cuda_graph_script.py [--mode once|recapture] [--steps 30] [--batch 256] [--width 1024] [--trace PATH]
"""

import argparse
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--mode", choices=["once", "recapture"], default="once")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--batch", type=int, default=256)
p.add_argument("--width", type=int, default=1024)
p.add_argument("--trace", default="")
args = p.parse_args()
if not torch.cuda.is_available():
    raise SystemExit("gpu_cuda_graph_script.py needs a CUDA device")

dev = torch.device("cuda")
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(args.width, args.width), torch.nn.ReLU(),
    torch.nn.Linear(args.width, args.width), torch.nn.ReLU(),
    torch.nn.Linear(args.width, 10)).to(dev)
loss_fn = torch.nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
batches = [(torch.randn(args.batch, args.width, device=dev), torch.randint(0, 10, (args.batch,), device=dev))
           for _ in range(4)]
static_x = torch.zeros(args.batch, args.width, device=dev)
static_y = torch.zeros(args.batch, dtype=torch.long, device=dev)


def body():
    loss = loss_fn(model(static_x), static_y)
    loss.backward()
    opt.step()
    return loss


# Warm-up on a side stream before any capture (as torch.cuda.graph's documentation asks): the optimizer's state
# and the cuBLAS workspaces exist before the first capture.
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for x, y in batches[:3]:
        static_x.copy_(x)
        static_y.copy_(y)
        opt.zero_grad(set_to_none=True)
        body()
torch.cuda.current_stream().wait_stream(side)


def capture():
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)  # backward in the graph allocates the gradients from its own pool
    with torch.cuda.graph(g):
        body()
    return g


graph = capture() if args.mode == "once" else None


def step(i):
    global graph
    x, y = batches[i % len(batches)]
    static_x.copy_(x)
    static_y.copy_(y)
    if args.mode == "recapture":
        graph = capture()
    graph.replay()


for i in range(3):  # the untraced warm-up of the measured loop
    step(i)
torch.cuda.synchronize()

prof = None
if args.trace:
    prof = torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
        schedule=torch.profiler.schedule(wait=0, warmup=1, active=args.steps))
    prof.start()
    step(0)
    prof.step()
t0 = time.perf_counter()
for i in range(args.steps):
    step(i)
    if prof:
        prof.step()
torch.cuda.synchronize()
dt = time.perf_counter() - t0
if prof:
    prof.stop()
    prof.export_chrome_trace(args.trace)
print(f"mode {args.mode} steps {args.steps} samples/s {args.steps * args.batch / dt:.1f}")
