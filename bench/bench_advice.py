#!/usr/bin/env python3
"""Is the advice on a loader stall the one plain runs confirm (not run in CI; docs/cpu-results.md)?

For scripts shaped like public trainers, each written here at run time:
  vae       the VAE example's shape: 28x28 samples made by PIL + ToTensor in the training process (num_workers=0),
            an MLP VAE, Adam: tiny samples, a short step
  folder    an ImageFolder trainer with more workers than cores (8): RandomResizedCrop, flip, normalize, a small
            CNN, SGD with momentum and a StepLR schedule stepped each epoch
  decode    a decode-bound loader in the training process (640x480 JPEGs cropped small) under a light model: the
            decoding is most of the step, so a worker on the other core pays
  noloader  a GPT-like step on token batches the loop makes itself (no DataLoader): no loader advice at all
each is run traced (`run --script --trace`), analysed (`analyze --json`: the first loader-stall finding, which says
what the loader verdict's model says), and its switch run plainly against the baseline in alternation (`--rounds`
pairs, untraced, as a user runs them). Without a switch, the finding's own old advice (workers = the cores) is run,
to show what the bound covers. Prints, per script: the advice, its bound, the measured ratio with its 95% interval,
and two checks: the switch is not measured slower beyond the noise, and the bound covers the measured ratio.

usage: bench_advice.py [--cli build/app/tunebench-cli] [--rounds 3] [--steps 120] [--only vae,folder,...]
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

from bench_data import cached_dataset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPTS = {
    "vae": textwrap.dedent('''\
        import argparse, numpy as np, torch, torch.nn as nn, torch.nn.functional as F
        from PIL import Image
        from torchvision import transforms
        p = argparse.ArgumentParser(); p.add_argument("--epochs", type=int, default=10); args = p.parse_args()
        torch.manual_seed(1)
        class Digits(torch.utils.data.Dataset):
            def __init__(self, n):
                self.x = np.random.default_rng(0).integers(0, 256, (n, 28, 28), dtype=np.uint8)
                self.t = transforms.ToTensor()
            def __len__(self): return len(self.x)
            def __getitem__(self, i): return self.t(Image.fromarray(self.x[i], mode="L")), 0
        loader = torch.utils.data.DataLoader(Digits(12800), batch_size=128, shuffle=True)
        class VAE(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1, self.fc21, self.fc22 = nn.Linear(784, 400), nn.Linear(400, 20), nn.Linear(400, 20)
                self.fc3, self.fc4 = nn.Linear(20, 400), nn.Linear(400, 784)
            def forward(self, x):
                h = F.relu(self.fc1(x.view(-1, 784)))
                mu, logvar = self.fc21(h), self.fc22(h)
                z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
                return torch.sigmoid(self.fc4(F.relu(self.fc3(z)))), mu, logvar
        model = VAE(); opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for epoch in range(args.epochs):
            for x, _ in loader:
                recon, mu, logvar = model(x)
                loss = F.binary_cross_entropy(recon, x.view(-1, 784), reduction="sum") - \\
                       0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
                opt.zero_grad(); loss.backward(); opt.step()
        '''),
    "folder": textwrap.dedent('''\
        import sys, torch, torch.nn as nn
        from torchvision import datasets, transforms
        tf = transforms.Compose([transforms.RandomResizedCrop(64), transforms.RandomHorizontalFlip(),
                                 transforms.ToTensor(), transforms.Normalize([0.5] * 3, [0.25] * 3)])
        loader = torch.utils.data.DataLoader(datasets.ImageFolder(sys.argv[1], tf), batch_size=16, shuffle=True,
                                             num_workers=8)
        model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                              nn.Linear(32, 10))
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        for epoch in range(100):
            for x, y in loader:
                loss = nn.functional.cross_entropy(model(x), y)
                opt.zero_grad(); loss.backward(); opt.step()
            sched.step()
        '''),
    "decode": textwrap.dedent('''\
        import sys, torch, torch.nn as nn
        from torchvision import datasets, transforms
        tf = transforms.Compose([transforms.CenterCrop(96), transforms.ToTensor()])
        loader = torch.utils.data.DataLoader(datasets.ImageFolder(sys.argv[1], tf), batch_size=16, shuffle=True)
        model = nn.Sequential(nn.AdaptiveAvgPool2d(8), nn.Flatten(), nn.Linear(192, 64), nn.ReLU(), nn.Linear(64, 10))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for epoch in range(100):
            for x, y in loader:
                loss = nn.functional.cross_entropy(model(x), y)
                opt.zero_grad(); loss.backward(); opt.step()
        '''),
    "noloader": textwrap.dedent('''\
        import torch, torch.nn as nn
        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
        model = nn.Sequential(nn.Embedding(256, 64), nn.TransformerEncoder(layer, 2), nn.Linear(64, 256))
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
        for it in range(100000):
            x = torch.randint(0, 256, (8, 64))
            logits = model(x)
            loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 256), x[:, 1:].reshape(-1))
            opt.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0); opt.step()
        '''),
}


def run(cli, script, args, steps, tmp, sets=None, trace=None):
    js = os.path.join(tmp, "run.json")
    cmd = [cli, "run", "--script", script, "--steps", str(steps), "--json", js]
    if sets:
        cmd += ["--set", sets]
    if trace:
        cmd += ["--trace", trace]
    p = subprocess.run(cmd + ["--"] + args, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-400:]))
    with open(js) as f:
        return json.load(f)


def interval(ratios):
    """The ratios' geometric mean and its 95% t interval (as the tuner's pairs)."""
    logs = [math.log(r) for r in ratios]
    m = statistics.mean(logs)
    if len(logs) < 2:
        return math.exp(m), float("nan"), float("nan")
    t = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36}.get(len(logs) - 1, 2.0)
    h = t * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(m), math.exp(m - h), math.exp(m + h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "tunebench-cli"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--only", default="vae,folder,decode,noloader")
    a = ap.parse_args()
    cores = os.cpu_count()
    folder = cached_dataset(a.cli, "advice-folder", 512, "320x240")
    large = cached_dataset(a.cli, "advice-decode", 512, "640x480")
    data_of = {"folder": [folder], "decode": [large], "vae": ["--epochs", "50"], "noloader": []}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.only.split(","):
            script = os.path.join(tmp, name + ".py")
            with open(script, "w") as f:
                f.write(SCRIPTS[name])
            args = data_of[name]
            trace = os.path.join(tmp, name + "-trace.json")
            run(a.cli, script, args, 60, tmp, trace=trace)
            an = os.path.join(tmp, name + "-analysis.json")
            subprocess.run([a.cli, "analyze", trace, "--json", an], check=True, capture_output=True, timeout=300)
            with open(an) as f:
                found = [x for x in json.load(f).get("findings", []) if x.get("kind") == "loader_stall"]
            if not found:
                print("%-8s no loader-stall finding: no loader advice (nothing to run)" % name)
                rows.append((name, "none", None, None))
                continue
            f0 = found[0]
            knob, value, bound = f0.get("knob", ""), f0.get("value", ""), f0.get("max_speedup", 0)
            switch = "%s=%s" % (knob, value) if knob else "workers=%d (the old advice: the cores)" % cores
            sets = "%s=%s" % (knob, value) if knob else "workers=%d" % cores
            # What the advice sets with its switch (crowded workers: persistent_workers, so that they start once).
            if knob and "persistent_workers" in f0.get("also", []):
                sets += ",persistent_workers=on"
                switch += " + persistent_workers=on"
            print("%-8s advice: %s" % (name, f0.get("message", "")))
            ratios = []
            for r in range(a.rounds):
                order = [None, sets] if r % 2 == 0 else [sets, None]  # alternate which side runs first
                got = {}
                for side in order:
                    got[side] = run(a.cli, script, args, a.steps, tmp, sets=side)["throughput"]["samples_per_s"]
                ratios.append(got[sets] / got[None])
                print("         round %d: baseline %.1f, %s %.1f samples/s: %.3fx" %
                      (r + 1, got[None], sets, got[sets], ratios[-1]))
                sys.stdout.flush()
            g, lo, hi = interval(ratios)
            not_slower = not (hi < 1)  # slower beyond the noise: the whole interval under 1
            covered = lo <= bound if knob else g <= bound * 1.05 or lo <= bound
            print("         %s: measured %.3fx [%.3f, %.3f] over %d pairs; bound %.2fx; switch not slower beyond "
                  "the noise: %s; bound covers it: %s" %
                  (switch, g, lo, hi, len(ratios), bound, "yes" if not_slower or not knob else "NO",
                   "yes" if covered else "NO"))
            rows.append((name, switch, (g, lo, hi), bound))
    print("\nsummary (%d cores, load average %s):" % (cores, open("/proc/loadavg").read().split()[0]))
    for name, switch, m, bound in rows:
        if m is None:
            print("  %-8s no advice" % name)
        else:
            print("  %-8s %-40s measured %.3fx [%.3f, %.3f]  bound %.2fx" % (name, switch, m[0], m[1], m[2], bound))


if __name__ == "__main__":
    main()
