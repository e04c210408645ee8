#!/usr/bin/env python3
"""Script benchmark (not run in CI): the example script (examples/train_folder.py) on a JPEG folder.

1. Hook overhead: the same run (--epochs E) as a plain `python3 train_folder.py` and under
   `python -m tunebench.launch`, alternating, whole-process wall time; prints hooked/plain per round and the
   median ratio (goal: <= 1.03).
2. Tuned vs naive: `tunebench-cli tune --script` on it; prints the speed-up with its interval and what was kept.

--tracing-cost: what `run --script --trace` states of tracing's own cost, on a fast script with a hand-written
update (no DataLoader, a small model, ~0.1 ms steps): its first 10 measured steps untraced as the reference, the
rest traced. Per run the traced steps' speed against the untraced ones and whether the run stated the cost (it
does below 0.95x; quiet, tracing slows this script well past that: the statement must show), then the median and
range. Was tests/engine/test_cli_script.cpp's ARunStatesTracingsOwnCost.

--shapes: the tuner's budget on scripts shaped as the ones a new user tried (`tune --script`, 40 s, 45 s for the
slow start): a fast script with a hand-written update and no DataLoader (once tried `workers` four times), an LSTM
over a DataLoader (its tunes once tried no knob: "the budget ran out" with half of it left), a script that sleeps
6 s before its first step. Per shape: the time used against the budget (held to 10% over), the knobs measured (at
least one), a loader knob tried (never for the first), and why it ended. Was tests/engine/test_cli_tune_shapes.cpp.

usage: bench_script.py [--cli build/app/tunebench-cli] [--images 512] [--size 640x480] [--epochs 2]
                       [--rounds 3] [--budget 200] [--python PY (default: this interpreter)]
       bench_script.py --tracing-cost [--rounds 5] [--cli ...]
       bench_script.py --shapes [--rounds 1] [--cli ...]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

from bench_data import cached_dataset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


FAST_REGRESSION = textwrap.dedent('''\
    import torch
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    x = torch.randn(256, 8); y = x @ torch.arange(8.0).view(8, 1) + 1
    for step in range(100000):
        loss = ((model(x) - y) ** 2).mean()
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.01 * p.grad
''')

NO_LOADER = textwrap.dedent('''\
    import torch
    torch.manual_seed(0)
    w = torch.zeros(8, 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    x = torch.randn(512, 8); y = x @ torch.arange(8.0).view(8, 1) + 1
    for step in range(10 ** 7):
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.01 * w.grad; b -= 0.01 * b.grad
            w.grad.zero_(); b.grad.zero_()
''')

SLOW_START = textwrap.dedent('''\
    import time
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    time.sleep(6)  # reading an index, building a vocabulary: seconds before the first step
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    data = TensorDataset(torch.randn(512, 32), torch.randint(0, 4, (512,)))
    loader = DataLoader(data, batch_size=32, shuffle=True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(100000):
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
''')

LOADER_KNOBS = ("workers", "pin_memory", "prefetch", "persistent_workers")


def spread(xs):
    return "median %.3f (%.3f-%.3f, %d runs)" % (statistics.median(xs), min(xs), max(xs), len(xs))


def tracing_cost(cli, rounds):
    speeds, stated = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "fast_regression.py")
        with open(script, "w") as f:
            f.write(FAST_REGRESSION)
        for r in range(rounds):
            js = os.path.join(tmp, "run.json")
            p = subprocess.run([cli, "run", "--script", script, "--steps", "120", "--trace", os.path.join(tmp, "t.json"),
                                "--trace-share", "0", "--json", js], capture_output=True, text=True, check=True)
            with open(js) as f:
                j = json.load(f)
            c = j["tracing_cost"]
            said = "tracing cost: the " in p.stdout
            stated += said
            speeds.append(c["traced_speed"])
            print("run %d: %d traced steps at %.2fx the speed of %d untraced (%.3f against %.3f ms a step): %s; %s"
                  % (r + 1, c["traced_steps"], c["traced_speed"], c["untraced_steps"], c["traced_step_ms"],
                     c["untraced_step_ms"], "stated" if said else "not stated", j["throughput"]["noise"]["text"]))
            sys.stdout.flush()
    print("traced speed: %s; the cost stated in %d of %d runs (below 0.95x)" % (spread(speeds), stated, rounds))


def shapes(cli, rounds):
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        for name, text, budget in (("no_loader", NO_LOADER, 40), ("slow_start", SLOW_START, 45)):
            path = os.path.join(tmp, name + ".py")
            with open(path, "w") as f:
                f.write(text)
            cases.append((name, path, [], budget))
        cases.insert(1, ("lstm_loader", os.path.join(ROOT, "python", "tests", "corpus", "rnn_classify.py"),
                         ["--epochs", "100000"], 40))
        for r in range(rounds):
            for name, path, args, budget in cases:
                js = os.path.join(tmp, "tune.json")
                subprocess.run([cli, "tune", "--script", path, "--budget", str(budget), "--json", js, "--quiet", "--"]
                               + args, check=True, stdout=subprocess.DEVNULL)
                with open(js) as f:
                    j = json.load(f)
                knobs = [t["knob"] for t in j["trials"] if t.get("knob") and t.get("phase") != "final"]
                loader = sorted(set(k for k in knobs if k in LOADER_KNOBS))
                print("%s: %.1f s of %d (%.2f of the budget, held to 1.10); %d knob trials (%s); loader knobs tried: %s;"
                      " ended: %s" % (name, j["elapsed_s"], budget, j["elapsed_s"] / budget, len(knobs),
                                      ", ".join(sorted(set(knobs))) or "none", ", ".join(loader) or "none", j["ended"]))
                sys.stdout.flush()


def main():
    if "--tracing-cost" in sys.argv or "--shapes" in sys.argv:
        p = argparse.ArgumentParser()
        p.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "tunebench-cli"))
        p.add_argument("--tracing-cost", action="store_true")
        p.add_argument("--shapes", action="store_true")
        p.add_argument("--rounds", type=int, default=0)
        a = p.parse_args()
        if a.tracing_cost:
            tracing_cost(a.cli, a.rounds or 5)
        if a.shapes:
            shapes(a.cli, a.rounds or 1)
        return
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
