#!/usr/bin/env python3
"""The README's headless demo tune, measured (not run in CI; what tests/engine/test_e2e_engine.cpp leaves out):
`tunebench-cli tune --model mnist_cnn --data imagefolder:DIR --budget B` on the demo's folder of 640x480 JPEGs
(256 images, 10 classes), N times. Per run it prints the verdict, the speed-up with its interval, the first knob
measured (the analysis's loader finding makes it `workers`), the time used against the budget, the knobs kept and
the noise verdict; then how many runs ended decided ("faster" with an interval above 1), how many measured
`workers` first, and the largest overrun of the budget. The demo's promise on a quiet 2-core machine: every run
decided, `workers` first, within the budget's 10% margin.

usage: bench_demo_tune.py [--cli build/app/tunebench-cli] [--budget 120] [--runs 3] [--images 256]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "tunebench-cli"))
    p.add_argument("--budget", type=float, default=120)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--images", type=int, default=256)
    a = p.parse_args()
    if not os.access(a.cli, os.X_OK):
        sys.exit("bench_demo_tune: no tunebench-cli at %s (build first, or --cli)" % a.cli)
    with tempfile.TemporaryDirectory(prefix="tb-demo-tune-") as d:
        made = subprocess.run([a.cli, "make-dataset", "--out", d + "/images", "--images", str(a.images),
                               "--size", "640x480", "--classes", "10"], capture_output=True, text=True)
        if made.returncode != 0:
            sys.exit("bench_demo_tune: make-dataset failed: " + made.stderr.strip())
        decided = workers_first = 0
        worst_overrun = 0.0
        for i in range(a.runs):
            js = "%s/tune-%d.json" % (d, i)
            load = load_average()
            r = subprocess.run([a.cli, "tune", "--model", "mnist_cnn", "--data", "imagefolder:" + d + "/images",
                                "--budget", str(a.budget), "--json", js, "--quiet"], capture_output=True, text=True,
                               timeout=a.budget * 4 + 120)
            if r.returncode != 0:
                print("run %d: failed (exit %d): %s" % (i + 1, r.returncode, r.stderr.strip()[-500:]))
                continue
            with open(js) as f:
                j = json.load(f)
            first = next((t["knob"] for t in j["trials"] if t.get("knob")), "-")
            ci = j.get("speedup_ci") or [float("nan"), float("nan")]
            overrun = j["elapsed_s"] / a.budget
            worst_overrun = max(worst_overrun, overrun)
            decided += j["verdict"] == "faster" and ci[0] > 1
            workers_first += first == "workers"
            print("run %d: %-9s %.2fx [%.2f, %.2f]  first knob %-8s  %.0f s of %.0f s (%.2f)  kept %s  noise %s  "
                  "load %.1f" % (i + 1, j["verdict"], j.get("speedup") or float("nan"), ci[0], ci[1], first,
                                 j["elapsed_s"], a.budget, overrun, ",".join("%s=%s" % kv for kv in j["changed"].items())
                                 or "nothing", j["noise"].get("verdict", "?"), load))
        print("decided %d of %d; workers measured first %d of %d; time used at most %.2f of the budget"
              % (decided, a.runs, workers_first, a.runs, worst_overrun))


if __name__ == "__main__":
    main()
