#!/usr/bin/env python3
"""Loader worker cost under glibc's default allocator vs pinned thresholds (not run in CI; docs/cpu-results.md).

A DataLoader worker process of examples/train_folder.py (PIL decoding) is timed from the outside: minor page
faults and CPU time per batch, read from /proc/PID/stat, for `--batches` batches after the first. Each round
runs one child under glibc's defaults and one with `cpu_allocator=glibc_tuned`'s GLIBC_TUNABLES, alternating
order; prints both and the ratio of CPU per batch (glibc / tuned).

usage: bench_script_workers.py [--cli build/app/tunebench-cli] [--python PY (default: this interpreter)] [--images 256]
                               [--size 640x480] [--batches 6] [--rounds 3]
"""

import argparse
import os
import statistics
import subprocess
import sys

from bench_data import cached_dataset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUNED = "glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=268435456"  # engine/src/cpu_allocator.cpp

CHILD = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
from train_folder import ImageFolder
from torch.utils.data import DataLoader
def stat(pid):
    f = open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()
    return int(f[7]), (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')
n = int(sys.argv[3])
dl = DataLoader(ImageFolder(sys.argv[2]), batch_size=32, shuffle=True, num_workers=1, persistent_workers=True)
it = iter(dl)
next(it)
pid = it._workers[0].pid
f0, c0 = stat(pid)
for _ in range(n):
    next(it)
f1, c1 = stat(pid)
print((f1 - f0) / n, (c1 - c0) / n * 1000)
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "tunebench-cli"))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--images", type=int, default=256)
    p.add_argument("--size", default="640x480")
    p.add_argument("--batches", type=int, default=6)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    data = cached_dataset(a.cli, "script", a.images, a.size)
    examples = os.path.join(ROOT, "examples")

    def one(tuned):
        env = dict(os.environ)
        env.pop("GLIBC_TUNABLES", None)
        if tuned:
            env["GLIBC_TUNABLES"] = TUNED
        out = subprocess.run([a.python, "-c", CHILD, examples, data, str(a.batches)], check=True, env=env,
                             stdout=subprocess.PIPE, text=True).stdout.split()
        return float(out[0]), float(out[1])

    ratios = []
    for r in range(a.rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        got = {t: one(t) for t in order}
        (fg, cg), (ft, ct) = got[False], got[True]
        ratios.append(cg / ct)
        print("round %d: glibc %.0f faults, %.0f ms CPU per batch; glibc_tuned %.0f faults, %.0f ms; glibc/tuned %.2fx"
              % (r + 1, fg, cg, ft, ct, ratios[-1]), flush=True)
    print("worker CPU per batch, glibc / glibc_tuned: median %.2fx over %d rounds (%d batches each)"
          % (statistics.median(ratios), a.rounds, a.batches))


if __name__ == "__main__":
    sys.exit(main())
