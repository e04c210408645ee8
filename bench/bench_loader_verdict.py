#!/usr/bin/env python3
"""Does the loader verdict's prediction hold (not run in CI; it was tests/engine/test_cli_script.cpp's until the
test suite kept only what holds on any machine)? `tunebench-cli run --script --trace` of a script whose samples
are read from a slow disk (a 10 ms sleep a file, SlowDisk) through torchvision transforms by 2 workers, for a
model whose step waits 20 ms for its accelerator (a sleep): the verdict should grade it highly input-bound (the
loop's wait 20% and more), name SlowDisk first at the script's line, and predict the workers that feed the model.
Then the run with that count, untraced as a user runs it: its throughput against the prediction (held to 15% on a
quiet machine, 35% on a busy one) and against the 2-worker run (1.3x and more quiet). Then the same script loading
in its own process (num_workers=0): the receive probe's figure and its prediction, checked by the run above when
it names the same count. Sleeps on both sides keep it about the prediction, not about the cores a busy machine
leaves; the verdict says how many cores other work left free during the traced run.

Per round it prints the figures; at the end the ratios' median and range over the rounds.

usage: bench_loader_verdict.py [--cli build/app/tunebench-cli] [--rounds 3] [--images 960]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent('''\
    import sys, time, torch
    from torchvision import datasets, transforms
    torch.set_num_threads(1)
    class SlowDisk:
        def __call__(self, img):
            time.sleep(0.010)  # a network mount's read
            return img
    tf = transforms.Compose([SlowDisk(), transforms.CenterCrop(64), transforms.ToTensor()])
    ds = datasets.ImageFolder(sys.argv[1], tf)
    workers = int(sys.argv[2])
    loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, num_workers=workers,
                                         persistent_workers=workers > 0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(), torch.nn.Linear(512, 3))
    opt = torch.optim.Adam(model.parameters())
    for epoch in range(1000):
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            time.sleep(0.020)  # the accelerator's step: the training process waits for it
''')


def run(cli, args, tmp, name):
    """The run's JSON document and its stdout."""
    js = os.path.join(tmp, name + ".json")
    p = subprocess.run([cli, "run", "--script"] + args[:1] + ["--json", js] + args[1:], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench_loader_verdict: %s failed: %s" % (name, p.stderr[-2000:]))
    with open(js) as f:
        return json.load(f), p.stdout


def spread(xs):
    return "median %.3f (%.3f-%.3f, %d rounds)" % (statistics.median(xs), min(xs), max(xs), len(xs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "tunebench-cli"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--images", type=int, default=960)  # 120 batches a pass: a measured run holds no pass's start
    a = ap.parse_args()
    held, gains, held0, waits = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        images = os.path.join(tmp, "images")
        subprocess.run([a.cli, "make-dataset", "--out", images, "--images", str(a.images), "--size", "96x72",
                        "--classes", "3"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        script = os.path.join(tmp, "slow_disk_folder.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        for r in range(a.rounds):
            j, out = run(a.cli, [script, "--steps", "80", "--trace", os.path.join(tmp, "t.json"), "--", images, "2"],
                         tmp, "traced")
            v = j["loader"]
            w, predicted, alone = v["need_workers"], v["expect_samples_s"], j["throughput"]["samples_per_s"]
            quiet = v["cores"] >= v["machine_cores"]
            first = v["parts"][0]["name"] if v["parts"] else "?"
            print("round %d: 2 workers: %.1f samples/s; wait %.0f%% (%s); slowest part %s %.1f ms (%s); predicts %d "
                  "workers at %.1f samples/s; %d of %d cores free" %
                  (r + 1, alone, 100 * v["wait_share"], v["grade"], first, v["parts"][0]["ms"] if v["parts"] else 0,
                   v["fixes"][0]["where"] if v["fixes"] else "no fix", w, predicted, v["cores"], v["machine_cores"]))
            waits.append(v["wait_share"])
            if w <= 2 or predicted <= 0:
                print("  no count above 2 predicted: nothing to check")
                continue
            jw, _ = run(a.cli, [script, "--steps", "150", "--", images, str(w)], tmp, "predicted")
            got = jw["throughput"]["samples_per_s"]
            held.append(got / predicted)
            gains.append(got / alone)
            print("  %d workers, untraced: %.1f samples/s: %.3f of the prediction (held to %d%%), %.2fx the 2 workers "
                  "(1.3x and more quiet)" % (w, got, got / predicted, 15 if quiet else 35, got / alone))
            j0, out0 = run(a.cli, [script, "--steps", "60", "--trace", os.path.join(tmp, "t0.json"), "--", images, "0"],
                           tmp, "from0")
            v0 = j0["loader"]
            said = "counting what taking each batch from a worker costs it" in out0
            line = ("  from num_workers=0: receive %.2f ms a batch, fed %.1f < consume %.1f samples/s, predicts %d "
                    "workers at %.1f samples/s%s" % (v0["receive_ms"], v0["fed_samples_s"], v0["consume_samples_s"],
                                                     v0["need_workers"], v0["expect_samples_s"],
                                                     "" if said else " (the line does not say it counts the receiving)"))
            if v0["need_workers"] == w and v0["expect_samples_s"] > 0:
                held0.append(got / v0["expect_samples_s"])
                line += ": the %d-worker run got %.3f of it" % (w, held0[-1])
            print(line)
            sys.stdout.flush()
    print("loop's wait with 2 workers: %s (highly input-bound from 0.2)" % spread(waits))
    if held:
        print("got/predicted: %s; got/2 workers: %s" % (spread(held), spread(gains)))
    if held0:
        print("got/predicted from num_workers=0: %s" % spread(held0))


if __name__ == "__main__":
    sys.exit(main())
