#!/usr/bin/env python3
"""Is a script's epoch rhythm still taken for noise (not run in CI; docs/cpu-results.md)?

A trainer shaped like the image-classification reference trainers: an ImageFolder of JPEGs (RandomResizedCrop,
flip, normalize), more loader workers than cores and no persistent_workers (each epoch spawns them again), a small
CNN, SGD + StepLR, and after every short epoch (15 steps) a validation pass and a checkpoint (torch.save). Each
epoch's first step waits for its workers; the validation is between steps. Two figures:

  recorded  the trainer run once under the launcher for --steps steps; its steps' wall times cut into windows as
            the tuner's shortest window asks (11 steps) and as the pass rule makes them (measure/pass_rhythm.h:
            whole passes), each as adjacent A/A pairs: the spread (sd) of a pair's log throughput ratio, each way,
            over the same steps.
  tuned     `tune --script` of the trainer (--tunes times, --budget s each): the noise floor the tuner measured
            (JSON noise_floor.sd_log) and what it said of its windows (environment.windows). Run it with another
            --cli (a build before the pass rule) for the old figure.

usage: bench_epoch_rhythm.py [--cli build/app/tunebench-cli] [--steps 400] [--window 11] [--tunes 1] [--budget 90]
"""

import argparse
import json
import math
import os
import select
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

from bench_data import cached_dataset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "python")

TRAINER = textwrap.dedent('''\
    import os, sys, torch, torch.nn as nn
    from torchvision import datasets, transforms
    torch.manual_seed(0)
    norm = transforms.Normalize([0.5] * 3, [0.25] * 3)
    train_tf = transforms.Compose([transforms.RandomResizedCrop(64), transforms.RandomHorizontalFlip(),
                                   transforms.ToTensor(), norm])
    val_tf = transforms.Compose([transforms.Resize(72), transforms.CenterCrop(64), transforms.ToTensor(), norm])
    train = torch.utils.data.DataLoader(datasets.ImageFolder(sys.argv[1], train_tf), batch_size=16, shuffle=True,
                                        num_workers=4)
    val = torch.utils.data.DataLoader(datasets.ImageFolder(sys.argv[2], val_tf), batch_size=32, num_workers=2)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    for epoch in range(1000):
        model.train()
        for i, (x, y) in enumerate(train):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
        sched.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in val:
                correct += (model(x).argmax(1) == y).sum().item()
        torch.save({"epoch": epoch, "state_dict": model.state_dict()}, os.path.join(sys.argv[3], "checkpoint.pth"))
        print("epoch %d acc %d" % (epoch, correct), flush=True)
    ''')


def python_of(cli):
    """The project's interpreter, as the CLI finds it (scripts/python-env.sh)."""
    out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "python-env.sh"), "--existing"], capture_output=True,
                         text=True)
    return out.stdout.strip() or sys.executable


def record(python, script, args, steps, timeout=900):
    """The trainer under the launcher for `steps` steps: its step messages."""
    r, w = os.pipe()
    env = dict(os.environ, PYTHONPATH=PKG)
    p = subprocess.Popen([python, "-m", "tunebench.launch", "--out-fd", str(w), "--steps", str(steps), script] + args,
                         pass_fds=[w], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.close(w)
    buf, out, deadline = b"", [], time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([r], [], [], 5)
        if not ready:
            if p.poll() is not None:
                break
            continue
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.split(b"\n")
        out += [json.loads(x) for x in lines if x.strip()]
    p.kill()
    p.wait()
    os.close(r)
    return [m for m in out if m.get("type") == "step"]


def pass_length(steps):
    """Steps in the last whole pass (as measure/pass_rhythm.h counts them), 0 when none."""
    passes = [s["loader_pass"] for s in steps]
    lengths = []
    i = 0
    while i < len(passes):
        j = i
        while j < len(passes) and passes[j] == passes[i]:
            j += 1
        if j < len(passes) and (i > 0 or passes[0] == 0):
            lengths.append(j - i)
        i = j
    return lengths[-1] if lengths else 0


def pair_spread(steps, window, skip):
    """Adjacent windows of `window` steps after `skip` warm-up steps, as A/A pairs: sd of their log ratios."""
    walls = [s["wall_ns"] for s in steps[skip:]]
    samples = [s["samples"] for s in steps[skip:]]
    rates = []
    for k in range(len(walls) // window):
        a, b = k * window, (k + 1) * window
        rates.append(sum(samples[a:b]) / (sum(walls[a:b]) * 1e-9))
    ratios = [math.log(rates[k + 1] / rates[k]) for k in range(0, len(rates) - 1, 2)]
    return (statistics.stdev(ratios) if len(ratios) > 1 else float("nan")), len(ratios)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "tunebench-cli"))
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--window", type=int, default=11)
    ap.add_argument("--tunes", type=int, default=1)
    ap.add_argument("--budget", type=int, default=90)
    a = ap.parse_args()
    train = cached_dataset(a.cli, "rhythm-train", 240, "96x96")  # 15 steps of 16 an epoch
    valid = cached_dataset(a.cli, "rhythm-val", 96, "96x96")
    tmp = tempfile.mkdtemp(prefix="tb-rhythm-")
    script = os.path.join(tmp, "train.py")
    with open(script, "w") as f:
        f.write(TRAINER)
    args = [train, valid, tmp]
    python = python_of(a.cli)
    print("trainer: ImageFolder 240 JPEGs, batch 16, 4 workers on %d cores, validation + checkpoint each epoch"
          % os.cpu_count())

    steps = record(python, script, args, a.steps)
    e = pass_length(steps)
    skip = 5
    asked, n_asked = pair_spread(steps, a.window, skip)
    whole = a.window if e <= 1 else -(-a.window // e) * e
    if whole > 2 * a.window:
        whole = a.window
    passes, n_passes = pair_spread(steps, whole, skip)
    print("recorded  %d steps, %d a pass; A/A pairs of windows: %d steps (as asked) sd %.1f%% (%d pairs), "
          "%d steps (whole passes) sd %.1f%% (%d pairs)"
          % (len(steps), e, a.window, 100 * asked, n_asked, whole, 100 * passes, n_passes))

    for t in range(a.tunes):
        js = os.path.join(tmp, "tune-%d.json" % t)
        p = subprocess.run([a.cli, "tune", "--script", script, "--budget", str(a.budget), "--json", js, "--"] + args,
                           capture_output=True, text=True, timeout=20 * a.budget)
        if p.returncode != 0 or not os.path.exists(js):
            print("tuned     tune %d failed (%d): %s" % (t + 1, p.returncode, p.stderr.strip()[-300:]))
            continue
        with open(js) as f:
            j = json.load(f)
        nf = j.get("noise_floor", {})
        env = j.get("environment", {})
        window = j["trials"][0].get("window") if j.get("trials") else None
        print("tuned     tune %d: noise floor sd %.1f%% (%s pairs), windows of %s steps: %s; ended: %s"
              % (t + 1, 100 * (nf.get("sd_log") or float("nan")), nf.get("pairs"), window,
                 env.get("windows", "as asked"), (j.get("ended") or "")[:120]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
