#!/usr/bin/env python3
"""What timing the loader's parts costs a loader-bound script (not run in CI): an ImageFolder of JPEGs through the
ImageNet example's transforms and a small CNN, traced the default way under the launcher, with the per-sample
timing (python/tunebench/hooks/loader_parts.py) on and off (TUNEBENCH_LOADER_PARTS=on or not) alternating within each
round, at 0 and 2 workers. Per configuration it prints the median untraced step, on against off (> 1.00 is
slower), and the loop's wait share: the issue's target is 2% of a loader-bound step.

--micro: the cost a sample in one process, where the separate processes above vary by ±10-20% run to run (the
same code measured 0.88x and 1.23x): the same ImageFolder samples read in turns of 500 (60 with --big) untraced
(every wrapper taken off: the baseline each figure is against), with the timing off (patched, not recording),
timing every sample, timing as it does (sampled), and as it does while a trace chunk records (every sample timed
and kept on the timeline's lanes, hooks/loader_lanes.py), TURNS turns each in an order that alternates; what each
adds a sample against the same round's untimed turn, its mean and standard error (between runs the figures move
more: about ±0.6%). At 96x128 JPEGs (a 0.28 ms sample: the worst case, timing's cost is per sample) and with
--big at 375x500 (ImageNet's size, through a 224 crop).

The traced runs also give the spread of their chunks' clock offsets (each chunk states its clock's offset to the
monotonic one, which the loader's lanes are placed by: one clock, so the spread is the clock marker's own jitter;
under 5 ms was the tests' bound until it moved here).

--receive: what the receive probe (python/tunebench/hooks/loader_receive.py) measures for taking a batch from a
worker, in this process: a small batch (576 bytes) and a 64 MB one (16384 pages to map and touch: a millisecond
and more on any x86; 4.2-4.6 ms here against 0.5-0.9), the median of --rounds probes each.

usage: bench_loader_parts.py [--images 256] [--steps 120] [--rounds 3] [--python P]
       bench_loader_parts.py --micro [--big]
       bench_loader_parts.py --receive [--rounds 9]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import textwrap

from launcher_messages import launch

# --micro: turns of each configuration. Long turns compared by their median (15 of 2000 samples) resolved about
# ±1%, and a median leaves out the rare costs (a totals write once a second); short turns, many, compared round by
# round with the plain turn of the same round, give the mean cost with its standard error.
TURNS = 60

SCRIPT = textwrap.dedent('''
    import sys, torch
    from torchvision import datasets, transforms
    tf = transforms.Compose([transforms.RandomResizedCrop(64), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                             transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    ds = datasets.ImageFolder(sys.argv[1], tf)
    workers = int(sys.argv[2])
    loader = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True, num_workers=workers,
                                         persistent_workers=workers > 0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
                                torch.nn.Flatten(), torch.nn.Linear(256, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(1000):
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
''')


def make_images(root, n):
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(0)
    for i in range(n):
        d = os.path.join(root, "c%d" % (i % 4))
        os.makedirs(d, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (96, 128, 3), dtype=np.uint8)).save(os.path.join(d, "%d.jpg" % i))


def one(python, script, images, workers, steps, on, tdir):
    """(median untraced step ms, the loop's wait share, the spread of the chunks' clock offsets in us) of one
    traced run."""
    env = {"TUNEBENCH_LOADER_PARTS": "on" if on else "off"}
    msgs = launch(python, ["--steps", str(steps), "--trace-dir", tdir], script, "bench_loader_parts",
                  env_extra=env, script_args=[images, str(workers)])
    steps = [m for m in msgs if m["type"] == "step"][5:]  # past the first batches' start-up
    free = [s for s in steps if not s.get("traced")]
    wait = sum(s["data_wait_ns"] for s in free) / max(1, sum(s["wall_ns"] for s in free))
    offsets = []
    for m in msgs:
        if m["type"] == "trace":
            with open(m["path"]) as f:
                offsets.append(float(json.load(f)["tunebench_clock_offset_us"]))
    return statistics.median(s["wall_ns"] for s in free) / 1e6, wait, max(offsets) - min(offsets) if offsets else 0.0


def receive(rounds):
    """The receive probe's figures for a small and a 64 MB batch, in this process (see the docstring)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
    import torch
    from tunebench.hooks import loader_receive
    batches = (("small", lambda: (torch.zeros(8, 16), torch.arange(8))),
               ("64 MB", lambda: {"x": torch.ones(4, 4096, 1024), "y": [torch.arange(4)]}))
    got = {name: [] for name, _ in batches}
    for r in range(rounds):
        for name, make in (batches if r % 2 == 0 else batches[::-1]):
            got[name].append(loader_receive.measure(make()))
    print("receive probe, median of %d: %s" % (rounds, "; ".join(
        "%s batch (%d bytes) %.3f ms" % (name, v[0]["bytes"], statistics.median(x["ns"] for x in v) / 1e6)
        for name, v in got.items())))


def micro(big):
    """The timing's cost a sample, in this process (see the docstring)."""
    import time
    import torch
    from torchvision import datasets, transforms
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
    from tunebench.hooks import loader_parts as lp
    with tempfile.TemporaryDirectory() as tmp:
        import numpy as np
        from PIL import Image
        rng = np.random.default_rng(0)
        size, crop, n = ((375, 500), 224, 60) if big else ((96, 128), 64, 500)
        for i in range(64):
            d = os.path.join(tmp, "c%d" % (i % 4))
            os.makedirs(d, exist_ok=True)
            Image.fromarray(rng.integers(0, 255, size + (3,), dtype=np.uint8)).save(os.path.join(d, "%d.jpg" % i))
        tf = transforms.Compose([transforms.RandomResizedCrop(crop), transforms.RandomHorizontalFlip(),
                                 transforms.ToTensor(), transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
        ds = datasets.ImageFolder(tmp, tf)
        torch.set_num_threads(1)
        out = os.path.join(tmp, "parts")
        lp.enable(out)
        lp.attach(torch.utils.data.DataLoader(ds, batch_size=8))
        share = lp.SHARE

        def turn():
            t = time.perf_counter_ns()
            for i in range(n):
                ds[i % 64]
            return (time.perf_counter_ns() - t) / n / 1000

        for i in range(100):
            ds[i % 64]
        from tunebench.hooks import loader_lanes as ll
        # The loader as it is untraced: every wrapper taken off (the timing "off" below still passes them).
        import PIL.Image
        import PIL.ImageFile
        patched = [(PIL.Image, "open", PIL.Image.open.__wrapped__),
                   (PIL.ImageFile.ImageFile, "load", PIL.ImageFile.ImageFile.__dict__["load"].__wrapped__),
                   (transforms.Compose, "__call__", lp._compose_v1.orig)]
        for cls in type(ds).__mro__:
            fn = cls.__dict__.get("__getitem__")
            if getattr(fn, "_tunebench_sample", False):
                patched.append((cls, "__getitem__", fn.__wrapped__))
        patched = [(o, name, getattr(o, name) if o is PIL.Image else o.__dict__[name], orig) for o, name, orig in patched]

        def wrapped(on):
            for o, name, timed, orig in patched:
                setattr(o, name, timed if on else orig)

        def configure(k):
            wrapped(k != "plain")
            lp._dir, lp.SHARE = (None if k in ("plain", "off") else out), (1e9 if k == "every" else share)
            # While a trace chunk records: every sample timed and kept on its lane (written to the lanes file).
            ll.set_recording(k == "lanes")

        res = {"plain": [], "off": [], "every": [], "sampled": [], "lanes": []}
        for r in range(TURNS):
            for k in (list(res) if r % 2 == 0 else list(res)[::-1]):  # alternating order: drift cancels
                configure(k)
                res[k].append(turn())
                if k == "lanes":  # its events written and taken now, not in the next configuration's turn
                    ll.set_recording(False)
                    lp._rec.write(force=True)
                    ll.take()
        configure("sampled")
        m = {k: statistics.mean(v) for k, v in res.items()}

        def more(k):
            # Each round's turn against the same round's plain turn: the mean difference and its standard error.
            d = [a - b for a, b in zip(res[k], res["plain"])]
            se = statistics.stdev(d) / len(d) ** 0.5
            return "+%.1f us ± %.1f (%.1f%% ± %.1f)" % (statistics.mean(d), se, 100 * statistics.mean(d) / m["plain"],
                                                       100 * se / m["plain"])
        print("sample %.1f us untraced (no wrapper, the mean of %d turns of %d); against it, ± a standard error: the "
              "wrappers with the timing off %s; every sample timed %s; sampled %s; on the timeline's lanes (a chunk "
              "recording) %s"
              % (m["plain"], TURNS, n, more("off"), more("every"), more("sampled"), more("lanes")))


def main():
    if "--micro" in sys.argv:
        micro("--big" in sys.argv)
        return
    if "--receive" in sys.argv:
        ap = argparse.ArgumentParser()
        ap.add_argument("--receive", action="store_true")
        ap.add_argument("--rounds", type=int, default=9)
        receive(ap.parse_args().rounds)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=256)
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        images = os.path.join(tmp, "images")
        make_images(images, a.images)
        script = os.path.join(tmp, "train.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        print("workers  step ms off  step ms on  on/off  loop's wait  chunk clock offsets' spread")
        for workers in (0, 2):
            ms = {True: [], False: []}
            waits, spreads = [], []
            for k in range(a.rounds):
                for on in ((False, True) if k % 2 == 0 else (True, False)):
                    step, wait, spread = one(a.python, script, images, workers, a.steps, on,
                                             os.path.join(tmp, "t%d-%d-%d" % (workers, k, on)))
                    ms[on].append(step)
                    waits.append(wait)
                    spreads.append(spread)
            off, on = statistics.median(ms[False]), statistics.median(ms[True])
            print("%7d  %11.2f  %10.2f  %6.3f  %10.0f%%  %.0f us at most" % (workers, off, on, on / off,
                                                                          100 * statistics.median(waits), max(spreads)))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
