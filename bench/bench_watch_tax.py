#!/usr/bin/env python3
"""What watching a script costs it (not run in CI): the issue's five script shapes, each run under the launcher
untraced and traced the default way (a sampled trace: chunks of --every steps, --trace-share 0.03), the two
alternating within each round so drift hits them alike.

Per shape it prints the median step, the run's wall time traced against untraced (the watch tax as the user
pays it: > 1.00 is slower), TuneBench's pauses as a share of the traced run (sum of the steps' profiler_ns
over the run's span), the longest pause in ms and in median steps, and how fast the traced steps ran against
the untraced ones of the same run (what the figures leave out); then, of the first traced run, the first
session's start (before step 0: a few ms, where importing the compiler took 0.66-0.73 s) and each chunk's
length in steps (the first is 3; the next ones grow while a chunk's stop stays within a step, up to --every).

The shapes are scaled to a small CPU (2 cores: steps of ~1 ms to ~0.5 s) and written as people write them:
  vae        a VAE on 28x28 images (DataLoader, Adam; the MNIST example's model)
  lstm_rows  an LSTM reading an image row by row (DataLoader, Adam)
  regression a tiny regression with no DataLoader (~1 ms steps)
  siamese    a twin CNN on image pairs with a contrastive loss (DataLoader, Adadelta)
  superres   a sub-pixel super-resolution CNN (DataLoader, Adam)
  slow_reads a DataLoader whose samples take 2 ms each (a sleep) in front of a small model: 35-40 ms steps
             holding few ops, whose chunks grow to --every steps (the shape python/tests/test_trace_sampling.py
             checked the growth on, until it failed on a quiet machine: the growth is the machine's)

and the corpus's scripts that train in steps (python/tests/corpus/, public examples' shapes: a GAN, an
actor-critic, a scaler, accumulation, a hand-written update, ...), each with the arguments that make it run
long enough (the launcher's --steps ends it).

usage: bench_watch_tax.py [--shapes vae,lstm_rows,...|corpus|all] [--seconds 20] [--rounds 2] [--every 20]
                          [--share S] [--trace-steps K] [--python P]
"""

import argparse
import os
import statistics
import sys
import tempfile
import textwrap

from launcher_messages import ROOT, launch

HEAD = "import torch, torch.nn as nn, torch.nn.functional as F\nfrom torch.utils.data import DataLoader, TensorDataset\ntorch.manual_seed(0)\n"

SHAPES = {
    "vae": None,  # python/tests/corpus/vae_mnist.py
    "lstm_rows": textwrap.dedent('''
        class Rows(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(28, 128, batch_first=True)
                self.out = nn.Linear(128, 10)
            def forward(self, x):
                y, _ = self.lstm(x.squeeze(1))
                return self.out(y[:, -1])
        model = Rows()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loader = DataLoader(TensorDataset(torch.rand(4096, 1, 28, 28), torch.randint(0, 10, (4096,))), batch_size=64,
                            shuffle=True)
        for epoch in range(1000):
            for x, y in loader:
                opt.zero_grad()
                F.cross_entropy(model(x), y).backward()
                opt.step()
    '''),
    "regression": textwrap.dedent('''
        model = nn.Sequential(*[nn.Linear(16, 16) for _ in range(8)])
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        x, y = torch.randn(32, 16), torch.randn(32, 16)
        for step in range(10000000):
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
    '''),
    "siamese": textwrap.dedent('''
        class Twin(nn.Module):
            def __init__(self):
                super().__init__()
                self.cnn = nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 5), nn.ReLU(),
                                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64 * 13 * 13, 128))
            def forward(self, a, b):
                return self.cnn(a), self.cnn(b)
        model = Twin()
        opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
        loader = DataLoader(TensorDataset(torch.rand(1024, 1, 64, 64), torch.rand(1024, 1, 64, 64),
                                          torch.randint(0, 2, (1024,)).float()), batch_size=32, shuffle=True)
        for epoch in range(1000):
            for a, b, same in loader:
                opt.zero_grad()
                ea, eb = model(a, b)
                d = F.pairwise_distance(ea, eb)
                loss = (same * d.pow(2) + (1 - same) * F.relu(2.0 - d).pow(2)).mean()
                loss.backward()
                opt.step()
    '''),
    "slow_reads": textwrap.dedent('''
        import time
        from torch.utils.data import Dataset
        class Slow(Dataset):
            def __len__(self):
                return 4096
            def __getitem__(self, i):
                time.sleep(0.002)
                return torch.randn(32), torch.randn(1)
        model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        for epoch in range(1000):
            for x, y in DataLoader(Slow(), batch_size=16, shuffle=True):
                opt.zero_grad()
                F.mse_loss(model(x), y).backward()
                opt.step()
    '''),
    "superres": textwrap.dedent('''
        class Net(nn.Module):
            def __init__(self, r=3):
                super().__init__()
                self.c1, self.c2 = nn.Conv2d(1, 64, 5, padding=2), nn.Conv2d(64, 64, 3, padding=1)
                self.c3, self.c4 = nn.Conv2d(64, 32, 3, padding=1), nn.Conv2d(32, r * r, 3, padding=1)
                self.shuffle = nn.PixelShuffle(r)
            def forward(self, x):
                x = F.relu(self.c3(F.relu(self.c2(F.relu(self.c1(x))))))
                return self.shuffle(self.c4(x))
        model = Net()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loader = DataLoader(TensorDataset(torch.rand(512, 1, 48, 48), torch.rand(512, 1, 144, 144)), batch_size=16,
                            shuffle=True)
        for epoch in range(1000):
            for x, y in loader:
                opt.zero_grad()
                F.mse_loss(model(x), y).backward()
                opt.step()
    '''),
}


CORPUS_DIR = os.path.join(ROOT, "python", "tests", "corpus")
# The corpus's scripts that run without a data folder, with arguments for a run longer than any measured here
# ("{tmp}": a scratch folder for their checkpoints).
CORPUS = {
    "accum_plateau": ["--epochs", "100000"],
    "actor_critic": ["--episodes", "1000000"],
    "amp_scaler": ["--epochs", "100000"],
    "checkpoint_whole_model": ["--epochs", "100000", "--ckpt", "{tmp}/ckpt.pt"],
    "dcgan": ["--epochs", "100000"],
    "gan_1d": ["--iterations", "10000000"],
    "imagenet_steplr": ["--epochs", "100000", "--out", "{tmp}"],
    "manual_sgd": ["--epochs", "100000", "--out", "{tmp}"],
    "mnist_onecycle": ["--epochs", "100000"],
    "rnn_classify": ["--epochs", "100000"],
}


def run(python, script, steps, traced, every, tdir, script_args=(), cwd=None, share=None, quota=0):
    """The launcher's messages for one run of `script` (`steps` steps), traced (the default way, or sampled
    under `share`) or not."""
    args = ["--steps", str(steps)] + (["--trace-dir", tdir, "--trace-every", str(every)] if traced else [])
    if traced and share is not None:
        args += ["--trace-share", str(share)]
    if traced and quota:
        args += ["--trace-steps", str(quota)]
    return launch(python, args, script, "bench_watch_tax", script_args=script_args, cwd=cwd)


def chunks_of(messages):
    """(the first session's start in ms, each chunk's length in steps) of a traced run."""
    steps = [m for m in messages if m["type"] == "step"]
    lengths = [m["last_step"] - m["first_step"] + 1 for m in messages if m["type"] == "trace"]
    return steps[0]["profiler_ns"] / 1e6, lengths


def measure(messages):
    """(the run's span from its first step's start to its last step's end in s, median step ms, pauses ns
    after the first step, the traced steps' speed against the untraced ones)."""
    steps = [m for m in messages if m["type"] == "step"]
    span = (steps[-1]["t_ns"] + steps[-1]["wall_ns"] - steps[0]["t_ns"]) / 1e9
    walls = [s["wall_ns"] / 1e6 for s in steps[1:]]
    pauses = [s["profiler_ns"] for s in steps[1:] if s["profiler_ns"]]
    traced = [s["wall_ns"] for s in steps[1:] if s.get("traced")]
    free = [s["wall_ns"] for s in steps[1:] if not s.get("traced")]
    speed = statistics.median(free) / statistics.median(traced) if traced and free else float("nan")
    return span, statistics.median(walls), pauses, speed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=",".join(SHAPES), help="names, 'corpus' or 'all'")
    ap.add_argument("--seconds", type=float, default=20.0, help="each run's length, about")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--every", type=int, default=20)
    ap.add_argument("--share", type=float, default=None, help="the launcher's --trace-share (its default: 0.03)")
    ap.add_argument("--trace-steps", type=int, default=20,
                    help="the launcher's detail quota (run --script's and serve --script's default: 20; 0: none)")
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    names = {"corpus": list(CORPUS), "all": list(SHAPES) + list(CORPUS)}.get(a.shapes, a.shapes.split(","))
    print("shape                   step ms  traced/untraced run  pauses of run  longest pause        traced steps' speed")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            path, script_args, cwd = os.path.join(tmp, name + ".py"), [], None
            if name in CORPUS:
                cwd = os.path.join(tmp, name)
                os.makedirs(cwd, exist_ok=True)
                path, script_args = os.path.join(CORPUS_DIR, name + ".py"), [x.replace("{tmp}", cwd) for x in CORPUS[name]]
            elif SHAPES[name] is None:
                path = os.path.join(CORPUS_DIR, "vae_mnist.py")
            else:
                with open(path, "w") as f:
                    f.write(HEAD + SHAPES[name])
            # The step, untraced, picks the run's length in steps.
            _, step_ms, _, _ = measure(run(a.python, path, 30, False, a.every, "", script_args, cwd))
            steps = max(60, int(a.seconds * 1000 / step_ms))
            spans = {False: [], True: []}
            pauses, speeds, medians, chunks = [], [], [], None
            for k in range(a.rounds):
                for traced in ((False, True) if k % 2 == 0 else (True, False)):
                    tdir = os.path.join(tmp, "chunks-%s-%d" % (name, k))
                    messages = run(a.python, path, steps, traced, a.every, tdir, script_args, cwd, a.share,
                                   a.trace_steps)
                    span, med, p, speed = measure(messages)
                    spans[traced].append(span)
                    if traced and chunks is None:
                        chunks = chunks_of(messages)
                    if traced:
                        pauses.append((sum(p) / 1e9 / span, max(p) / 1e6 if p else 0.0))
                        speeds.append(speed)
                    else:
                        medians.append(med)
            step = statistics.median(medians)
            ratio = statistics.median(spans[True]) / statistics.median(spans[False])
            share = statistics.median(x[0] for x in pauses)
            longest = max(x[1] for x in pauses)
            print("%-22s %8.2f  %6.3fx (%d steps)    %6.1f%%     %8.1f ms = %5.1f steps  %5.2fx"
                  % (name, step, ratio, steps, 100 * share, longest, longest / step, statistics.median(speeds)))
            print("%-22s first start %.1f ms; chunks of %s steps" % ("", chunks[0], ",".join(map(str, chunks[1]))))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
