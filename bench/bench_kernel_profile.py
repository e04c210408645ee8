#!/usr/bin/env python3
"""What a traced run's Inductor settings cost (python/tunebench/hooks/compile_kernels.py; not run in CI:
tests/engine/test_e2e_compile.cpp checks what holds on any machine).

A traced run switches on Inductor's C++ kernel profiling (each generated kernel enters a record_function at every
call, traced or not, for the whole run) and its provenance tracking (at code generation: the graph nodes' stacks
per kernel). Each round starts a fresh process per side, alternating which goes first, on a warm Inductor cache
(each side's cache entries are made once before the rounds: kernel profiling is in Inductor's cache key, so the
first traced run of a model compiles its own kernels once). A process compiles a small MLP's training step
(forward and backward with Inductor: torch's own compile time, each process with or without the settings), then
compiles one small C++ kernel (`relu(t * 2 + 1)` on 64 floats) twice, without and with kernel profiling, and
times blocks of 500 calls of each alternately (`--pairs` pairs; then a tenth as many under torch.profiler): the
median difference a call is what profiling adds to one kernel call. Prints the medians over the processes, the
paired differences with their range, and the machine's load.

usage: bench_kernel_profile.py [--rounds 5] [--pairs 200]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV_ON = {"TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE": "1", "INDUCTOR_PROVENANCE": "1"}

CHILD = r'''
import json, statistics, sys, time, torch
import torch._inductor.config as inductor_config
from torch import nn
pairs = int(sys.argv[1])
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 10))
x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))
cm = torch.compile(model)
nn.functional.cross_entropy(cm(x), y).backward()
compile_s = sum((c.entire_frame_compile_time_s or 0) for c in torch._dynamo.utils.get_compilation_metrics())
# The same small C++ kernel generated without and with profiling, in this process: blocks of calls alternate
# between them, so the machine's load falls on both alike.
t = torch.randn(64)
def plain(t):
    return torch.relu(t * 2.0 + 1.0)
def profiled(t):
    return torch.relu(t * 2.0 + 1.0)
fs = {}
for name, fn, on in (("plain", plain, False), ("profiled", profiled, True)):
    with inductor_config.patch({"cpp.enable_kernel_profile": on}):
        fs[name] = torch.compile(fn)
        fs[name](t)
for _ in range(2000):
    fs["plain"](t), fs["profiled"](t)
def block(f):
    t0 = time.perf_counter_ns()
    for _ in range(500):
        f(t)
    return (time.perf_counter_ns() - t0) / 500
def diffs(n):
    out = []
    for i in range(n):
        a, b = (block(fs["plain"]), block(fs["profiled"])) if i % 2 == 0 else reversed((block(fs["profiled"]), block(fs["plain"])))
        out.append(b - a)
    return out
untraced = diffs(pairs)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
    traced = diffs(max(1, pairs // 10))
ranges = sum(1 for e in p.events() if e.name.startswith("graph_") and "_cpp_" in e.name)
print(json.dumps({"compile_s": compile_s, "untraced_ns": statistics.median(untraced),
                  "traced_ns": statistics.median(traced), "profiled_ranges": ranges}))
'''


def child(on, pairs, cache):
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, PYTHONPATH=os.path.join(ROOT, "python"))
    for k in ENV_ON:
        env.pop(k, None)
    if on:
        env.update(ENV_ON)
    out = subprocess.run([sys.executable, "-c", CHILD, str(pairs)], env=env, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=200)
    a = ap.parse_args()
    cache = tempfile.mkdtemp(prefix="tb_kernel_profile_")
    for on in (False, True):
        child(on, 50, cache)  # each side's cache entries
    res = {False: [], True: []}
    for r in range(a.rounds):
        for on in ((False, True) if r % 2 == 0 else (True, False)):
            res[on].append(child(on, a.pairs, cache))
    load = os.getloadavg()
    print("load %.2f %.2f %.2f, %d rounds, %d pairs of 500 calls a process" % (load + (a.rounds, a.pairs)))
    med = lambda side, k: statistics.median(x[k] for x in res[side])
    diffs = sorted(b["compile_s"] - a_["compile_s"] for a_, b in zip(res[False], res[True]))
    print("compile (MLP, fwd+bwd, warm)  without %.3f s  with %.3f s  with-without median %+.3f s (%+.3f..%+.3f)" % (
        med(False, "compile_s"), med(True, "compile_s"), statistics.median(diffs), diffs[0], diffs[-1]))
    every = sorted(x[k] for side in res.values() for x in side for k in ("untraced_ns",))
    traced = sorted(x["traced_ns"] for side in res.values() for x in side)
    print("a kernel call, profiling's added time: untraced median %+.1f ns (processes %+.1f..%+.1f), "
          "under torch.profiler %+.1f ns (%+.1f..%+.1f); %d profiled ranges in the traced blocks" % (
              statistics.median(every), every[0], every[-1], statistics.median(traced), traced[0], traced[-1],
              res[True][0]["profiled_ranges"]))

if __name__ == "__main__":
    main()
