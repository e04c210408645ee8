#!/usr/bin/env python3
"""The CI gate's power and false alarms on real processes (not run in CI): `tunebench-cli gate` run --rounds times
on each case below, exactly as a CI job runs it, printing how often each verdict came (with a 95% Wilson interval
on the share of the verdict the case should get), the wall time each gate took, the pairs it ran and its ratio.
bench/bench_gate_power.cpp gives the same rule's rates on simulated processes at set noise levels; this is what
this machine's noise does to them. The cases (the MLP script of tests/gate/gate_scripts.h, in a git repository
made in a temporary folder, --steps 80, the script's own `--epochs 100`):

  wider     c1 (width 640) against c2 (width 686: 15% more multiply-adds in the hidden layers), --max-time 300:
            should be "regression" (the gate's power on a real change)
  comment   c1 against c2 that only adds a comment, --max-time 90: should never be "regression" (its false
            alarm); "no change" or "undecided" are both right, the share of each is how quiet the machine was
  anomaly   the same file with and without the launcher knob --candidate-set anomaly_detection=on,
            --max-time 300: should be "regression"
  engine    the engine's own run (--model mnist_cnn) with --candidate-set anomaly_detection=on, --steps 40:
            should be "regression"

Run alone on the machine: whatever else runs widens the noise (the gate's lines say "the machine was busy"), which
is then what the figures measure.

usage: bench_gate_cli.py [--cli build/app/tunebench-cli] [--rounds 5] [--cases wider,comment,anomaly,engine]
                         [--steps 80] [--python PY]
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERDICTS = ["regression", "no change", "improvement", "undecided", "could not run"]


def train_py(width, extra=""):
    """tests/gate/gate_scripts.h's train_py(width, extra_line): the same script, the same bytes."""
    return f'''import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
{extra}

def make_model(width):
    return nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    torch.manual_seed(0)
    x, y = torch.randn(8192, 64), torch.randint(0, 10, (8192,))
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True)
    model = make_model({width})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
    for epoch in range(args.epochs):
        for step, (xb, yb) in enumerate(loader):
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        sched.step()
    if args.out:
        torch.save(model, args.out)


if __name__ == "__main__":
    main()
'''


def git(repo, *args):
    subprocess.run(["git", "-c", "user.email=b@example.com", "-c", "user.name=b", *args], cwd=repo, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_repo(path, texts):
    """A repository with train.py committed once per text, tagged c1, c2, ..."""
    os.makedirs(path)
    git(path, "init", "-q", "-b", "main", ".")
    for k, (message, text) in enumerate(texts, 1):
        with open(os.path.join(path, "train.py"), "w") as f:
            f.write(text)
        git(path, "add", "train.py")
        git(path, "commit", "-q", "-m", message)
        git(path, "tag", f"c{k}")
    return path


def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "tunebench-cli"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--cases", default="wider,comment,anomaly,engine")
    p.add_argument("--steps", type=int, default=80)
    p.add_argument("--python", default="")
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="bench_gate_cli_")
    commented = train_py(640).replace("def main", "# Trains the MLP; see the README for the data.\ndef main", 1)
    wider = make_repo(os.path.join(work, "wider"),
                      [("MLP baseline", train_py(640)), ("Wider hidden layers", train_py(686))])
    comment = make_repo(os.path.join(work, "comment"), [("MLP baseline", train_py(640)), ("Document main", commented)])
    script = os.path.join(wider, "train.py")
    git(wider, "checkout", "-q", "c1")
    steps = ["--steps", str(a.steps)]
    py = ["--python", a.python] if a.python else []
    script_args = ["--", "--epochs", "100"]
    # case: (the verdict it should get, where the gate runs, its options, the script's arguments)
    cases = {
        "wider": ("regression", wider, ["--script", "train.py", "--baseline", "c1", "--candidate", "c2", *steps,
                                        "--max-time", "300"], script_args),
        "comment": ("no regression", comment, ["--script", "train.py", "--baseline", "c1", "--candidate", "c2", *steps,
                                               "--max-time", "90"], script_args),
        "anomaly": ("regression", work, ["--baseline-script", script, "--candidate-script", script, "--candidate-set",
                                         "anomaly_detection=on", *steps, "--max-time", "300"], script_args),
        "engine": ("regression", work, ["--model", "mnist_cnn", "--candidate-set", "anomaly_detection=on", "--steps",
                                        "40"], []),
    }
    print(f"tunebench-cli gate, {a.rounds} rounds a case, {os.cpu_count()} cores; load at start "
          f"{os.getloadavg()[0]:.1f}")
    print(f"{'case':8} {'should be':14} " + " ".join(f"{v:>13}" for v in VERDICTS) +
          "   share as it should [95%]   wall s median [min, max]   pairs median   ratio median [min, max]")
    try:
        for name in a.cases.split(","):
            want, cwd, options, after = cases[name]
            counts = {v: 0 for v in VERDICTS}
            walls, pairs, ratios = [], [], []
            for r in range(a.rounds):
                out = os.path.join(work, f"{name}_{r}.json")
                t0 = time.perf_counter()
                # --why off: the traced pair after a change is the why's cost, not the verdict's.
                proc = subprocess.run([a.cli, "gate", *options, *py, "--why", "off", "--json", out, *after], cwd=cwd,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                walls.append(time.perf_counter() - t0)
                try:
                    with open(out) as f:
                        j = json.load(f)
                except (OSError, ValueError):
                    j = {"verdict": "could not run"}
                counts[j["verdict"]] += 1
                if j.get("pairs"):
                    pairs.append(j["pairs"])
                if j.get("ratio") is not None:
                    ratios.append(j["ratio"])
                if j["verdict"] == "could not run":
                    print(f"  {name} round {r}: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            good = counts["regression"] if want == "regression" else a.rounds - counts["regression"]
            lo, hi = wilson(good, a.rounds)
            ratio = (f"{statistics.median(ratios):.3f}x [{min(ratios):.3f}, {max(ratios):.3f}]" if ratios else "-")
            print(f"{name:8} {want:14} " + " ".join(f"{counts[v]:>13}" for v in VERDICTS) +
                  f"   {good}/{a.rounds} [{100 * lo:.0f}%, {100 * hi:.0f}%]".ljust(29) +
                  f"{statistics.median(walls):.0f} [{min(walls):.0f}, {max(walls):.0f}]".rjust(24) +
                  f"{statistics.median(pairs) if pairs else 0:>15}   {ratio}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
