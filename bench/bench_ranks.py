#!/usr/bin/env python3
"""Data-parallel benchmark (not run in CI; docs/distributed.md): 1 rank against 2 ranks of `tunebench-cli run`.

Both take the same per-rank batch on the same JPEG folder; the 2-rank run trains on twice the samples per step
(each rank its own shard) and all-reduces the gradients with DDP's Reducer over Gloo. Runs alternate
(1, 2, 1, 2, ...) so drift on this shared machine hits both; prints each run's group throughput (the measured
window's samples/s summed over the ranks), the median 2-rank/1-rank ratio and its min..max over rounds.

On a 2-core machine, expect little or no speed-up: the ranks split the same 2 cores (each gets 1 intra-op
thread instead of 2), and the all-reduce and the buffer broadcasts are extra work on those cores. Ranks pay off
when each one has its own device (a GPU per rank) or its own cores.

--live compares a live group (`serve --ranks 2`, rank 0 ordering every step through the rendezvous store)
with `run --ranks 2` instead: the cost of the orders. The live rate is taken from the step messages' arrival
times after the first `--steps` / 3 steps (the warm-up).

usage: bench_ranks.py [--cli build/app/tunebench-cli] [--model resnet18] [--images 256] [--size 64x64]
                      [--input 3,32,32] [--batch 16] [--steps 30] [--rounds 3] [--live]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

from bench_data import cached_dataset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(a, data, ranks, out):
    cmd = [a.cli, "run", "--model", a.model, "--data", "imagefolder:" + data, "--input", a.input,
           "--steps", str(a.steps), "--warmup", "5", "--set", "batch_size=%d,workers=0" % a.batch, "--json", out]
    if ranks > 1:
        cmd += ["--ranks", str(ranks)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
    with open(out) as f:
        d = json.load(f)
    return d["window"]["samples_per_s"]


def run_live(a, data):
    cmd = [a.cli, "serve", "--model", a.model, "--data", "imagefolder:" + data, "--input", a.input,
           "--steps", str(a.steps), "--warmup", "5", "--set", "batch_size=%d,workers=0" % a.batch, "--ranks", "2"]
    # stdin stays open: serve ends when it closes.
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    arrived, samples = [], []
    for line in p.stdout:
        if line.strip():
            m = json.loads(line)
            if m.get("type") == "step":
                arrived.append(time.monotonic())
                samples.append(m["samples"])  # the group's
    p.wait(timeout=900)
    skip = a.steps // 3
    return sum(samples[skip + 1:]) / (arrived[-1] - arrived[skip])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "tunebench-cli"))
    p.add_argument("--model", default="resnet18")
    p.add_argument("--images", type=int, default=256)
    p.add_argument("--size", default="64x64")
    p.add_argument("--input", default="3,32,32")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--live", action="store_true", help="live group (serve --ranks 2) against run --ranks 2")
    a = p.parse_args()
    data = cached_dataset(a.cli, "ranks", a.images, a.size)
    out = os.path.join(tempfile.gettempdir(), "tunebench-bench-ranks.json")
    ratios = []
    print("cores: %d; %s, batch %d per rank, %d steps, %s" % (os.cpu_count(), a.model, a.batch, a.steps, data))
    if a.live:
        for r in range(a.rounds):
            fresh = run(a, data, 2, out)
            live = run_live(a, data)
            ratios.append(live / fresh)
            print("round %d: run --ranks 2 %.1f samples/s, serve --ranks 2 %.1f samples/s, ratio %.3f" %
                  (r + 1, fresh, live, live / fresh))
        print("live / run: median %.3f (min %.3f, max %.3f over %d rounds)" %
              (statistics.median(ratios), min(ratios), max(ratios), len(ratios)))
        return
    for r in range(a.rounds):
        one = run(a, data, 1, out)
        two = run(a, data, 2, out)
        ratios.append(two / one)
        print("round %d: 1 rank %.1f samples/s, 2 ranks %.1f samples/s, ratio %.2f" % (r + 1, one, two, two / one))
    print("2 ranks / 1 rank: median %.2f (min %.2f, max %.2f over %d rounds)" %
          (statistics.median(ratios), min(ratios), max(ratios), len(ratios)))
    if os.cpu_count() and os.cpu_count() <= 2:
        print("note: %d cores: the two ranks share them (1 intra-op thread each) and add the all-reduce, so no "
              "speed-up is expected here; each rank needs its own GPU or cores to gain." % os.cpu_count())


if __name__ == "__main__":
    main()
