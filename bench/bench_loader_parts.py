#!/usr/bin/env python3
"""What timing the loader's parts costs a loader-bound script (not run in CI): an ImageFolder of JPEGs through the
ImageNet example's transforms and a small CNN, traced the default way under the launcher, with the per-sample
timing (python/tunebench/hooks/loader_parts.py) on and off (TUNEBENCH_LOADER_PARTS=on or not) alternating within each
round, at 0 and 2 workers. Per configuration it prints the median untraced step, on against off (> 1.00 is
slower), and the loop's wait share: the issue's target is 2% of a loader-bound step.

usage: bench_loader_parts.py [--images 256] [--steps 120] [--rounds 3] [--python P]
"""

import argparse
import os
import statistics
import sys
import tempfile
import textwrap

from launcher_messages import launch

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
    """(median untraced step ms, the loop's wait share) of one traced run."""
    env = {"TUNEBENCH_LOADER_PARTS": "on" if on else "off"}
    msgs = launch(python, ["--steps", str(steps), "--trace-dir", tdir], script, "bench_loader_parts",
                  env_extra=env, script_args=[images, str(workers)])
    steps = [m for m in msgs if m["type"] == "step"][5:]  # past the first batches' start-up
    free = [s for s in steps if not s.get("traced")]
    wait = sum(s["data_wait_ns"] for s in free) / max(1, sum(s["wall_ns"] for s in free))
    return statistics.median(s["wall_ns"] for s in free) / 1e6, wait


def main():
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
        print("workers  step ms off  step ms on  on/off  loop's wait")
        for workers in (0, 2):
            ms = {True: [], False: []}
            waits = []
            for k in range(a.rounds):
                for on in ((False, True) if k % 2 == 0 else (True, False)):
                    step, wait = one(a.python, script, images, workers, a.steps, on, os.path.join(tmp, "t%d" % k))
                    ms[on].append(step)
                    waits.append(wait)
            off, on = statistics.median(ms[False]), statistics.median(ms[True])
            print("%7d  %11.2f  %10.2f  %6.3f  %10.0f%%" % (workers, off, on, on / off, 100 * statistics.median(waits)))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
