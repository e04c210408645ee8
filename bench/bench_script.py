#!/usr/bin/env python3
"""Script benchmark (not run in CI): the example script (examples/train_folder.py) on a JPEG folder.

1. Hook overhead: the same run (--epochs E) as a plain `python3 train_folder.py` and under
   `python -m tunebench.launch`, alternating, whole-process wall time; prints hooked/plain per round and the
   median ratio (goal: <= 1.03).
2. Tuned vs naive: `tunebench-cli tune --script` on it; prints the speed-up with its interval and what was kept.

usage: bench_script.py [--cli build/app/tunebench-cli] [--images 512] [--size 640x480] [--epochs 2]
                       [--rounds 3] [--budget 200] [--python PY (default: this interpreter)]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench_data import cached_dataset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "tunebench-cli"))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--images", type=int, default=512)
    p.add_argument("--size", default="640x480")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--budget", type=int, default=200)
    p.add_argument("--skip-tune", action="store_true")
    a = p.parse_args()
    data = cached_dataset(a.cli, "script", a.images, a.size)
    example = os.path.join(ROOT, "examples", "train_folder.py")
    args = ["--data", data, "--epochs", str(a.epochs)]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))

    def timed(cmd):
        t = time.monotonic()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        return time.monotonic() - t

    ratios = []
    for r in range(a.rounds):
        plain_cmd = [a.python, example] + args
        hooked_cmd = [a.python, "-m", "tunebench.launch", example] + args
        if r % 2 == 0:
            plain, hooked = timed(plain_cmd), timed(hooked_cmd)
        else:
            hooked, plain = timed(hooked_cmd), timed(plain_cmd)
        ratios.append(hooked / plain)
        print("round %d: plain %.2f s, hooked %.2f s, hooked/plain %.3f" % (r + 1, plain, hooked, ratios[-1]))
    print("hook overhead: hooked/plain median %.3f over %d rounds (%d images %s, %d epochs)"
          % (statistics.median(ratios), a.rounds, a.images, a.size, a.epochs))
    if a.skip_tune:
        return
    out = os.path.join(tempfile.gettempdir(), "tunebench-bench-script-tune.json")
    subprocess.run([a.cli, "tune", "--script", example, "--budget", str(a.budget), "--json", out, "--quiet", "--",
                    "--data", data, "--epochs", "1000"], check=True, stdout=subprocess.DEVNULL)
    j = json.load(open(out))
    print("tune --script (budget %d s): baseline %.1f -> final %.1f samples/s, speed-up %s [%s, %s]; kept %s; %s"
          % (a.budget, j["baseline_throughput"] or 0, j["final_throughput"] or 0, j["speedup"],
             j["speedup_ci"][0], j["speedup_ci"][1], j["changed"] or "nothing", j["noise"]["text"]))


if __name__ == "__main__":
    sys.exit(main())
