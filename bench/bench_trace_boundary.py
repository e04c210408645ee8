#!/usr/bin/env python3
"""What a script's trace chunk boundary costs the training thread, for each way of saving a chunk (not run
in CI): in place (TUNEBENCH_TRACE_FORK=0), in a forked child (=1), and the default (auto).

Each mode runs the script under the launcher (`python -m tunebench.launch`, chunks of `--every` steps kept);
the modes alternate within each round, so drift hits them alike. Per mode it prints the median pause at a
boundary (TuneBench's, between two steps), its save and fork parts, the median step, and the excess of the
step right after a boundary over the median step: time TuneBench leaves in the script's step, unnamed (a
fork's copy-on-write faults, a new session's first events). Then the pause and the excess over the median
step, as ratios.

With no script it runs two built-in shapes, on the GPU when there is one: a small CNN with a DataLoader
worker (few ops, a short save) and a deep stack of tiny layers (many ops, a long save).

--writer: in this process, the writer on its own (python/tunebench/trace/writer.py) with a real profiler chunk of
12 000 ops (a save of a few hundred ms here), in place and forked, --rounds times each: the hand-over (submit();
the fork, for a forked save: at a boundary, TuneBench's pause) and the longest the training thread then went
without running Python until the chunk was announced (saved in place, the rewrite's blocks: well under 0.1 s;
forked, 1-4 ms here, where a save in the writer's own thread stopped it 214-221 ms).

usage: bench_trace_boundary.py [--script S] [--steps 100] [--every 20] [--rounds 2] [--python P]
       bench_trace_boundary.py --writer [--rounds 3]
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

from launcher_messages import launch

MODES = ("0", "1", "auto")

CNN = '''
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
dev = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                      nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 8 * 8, 10)).to(dev)
loader = DataLoader(TensorDataset(torch.randn(4096, 3, 32, 32), torch.randint(0, 10, (4096,))), batch_size=64,
                    shuffle=True, num_workers=1)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(100):
    for x, y in loader:
        loss = F.cross_entropy(model(x.to(dev)), y.to(dev))
        opt.zero_grad(); loss.backward(); opt.step()
'''

MANY_OPS = '''
import torch, torch.nn as nn
torch.manual_seed(0)
dev = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(*[m for _ in range(40) for m in (nn.Linear(8, 8), nn.Tanh())]).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(100000):
    loss = model(torch.randn(4, 8, device=dev)).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
'''


def run(python, script, steps, every, mode, tdir):
    """The launcher's messages for one run of `script` with chunks saved the `mode` way."""
    shutil.rmtree(tdir, ignore_errors=True)
    # Every boundary, not a sampled trace's few (the launcher's default since the sampling): each is measured.
    args = ["--steps", str(steps), "--trace-dir", tdir, "--trace-every", str(every), "--trace-share", "0"]
    return launch(python, args, script, "bench_trace_boundary", {"TUNEBENCH_TRACE_FORK": mode})


def measure(messages):
    """(pauses [(dur, save, fork) ms], median step ms, excesses of the steps after a boundary ms)."""
    steps = [m for m in messages if m["type"] == "step"]
    walls = [s["wall_ns"] / 1e6 for s in steps]
    median = statistics.median(walls[1:])
    pauses = []
    for m in messages:
        if m["type"] != "trace":
            continue
        with open(m["path"]) as f:
            for e in json.load(f)["traceEvents"]:
                if e.get("cat") == "tunebench" and e["args"].get("what") == "profiler stop and start":
                    a = e["args"]
                    pauses.append((e["dur"] / 1e3, a.get("save_us", 0) / 1e3, a.get("fork_us", 0) / 1e3))
    after = [walls[i] - median for i, s in enumerate(steps) if i and s["profiler_ns"]]
    return pauses, median, after


def writer(rounds):
    """The writer's hand-over and the training thread's longest stall after it, in this process (see the
    docstring)."""
    import time
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
    import torch
    from tunebench.trace import tracer as tracing, writer as trace_writer

    class Channel:
        def __init__(self):
            self.messages = []

        def send(self, msg_type, **fields):
            self.messages.append(dict(fields, type=msg_type))

    def chunk(path):
        x = torch.ones(4)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            base_us = time.monotonic_ns() // 1000
            mark_ns = tracing.clock_mark()
            for k in range(3):
                with torch.autograd.profiler.record_function("tunebench.span#%d" % (k + 1)):
                    for _ in range(4000):
                        x = x + 1
        return trace_writer.Chunk(prof, path, {1: 0, 2: 1, 3: 2}, base_us, mark_ns)

    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("0", "1"):
            os.environ[trace_writer.FORK_ENV] = mode
            w = trace_writer.ChunkWriter(Channel())
            got = []
            for r in range(rounds):
                c = chunk(os.path.join(tmp, "chunk-%s-%d.json" % (mode, r)))
                before = len(w.ch.messages)
                w.save_here(c)
                t0 = time.perf_counter()  # from before the hand-over: a writer thread that takes the GIL stops
                w.submit(c)               # this thread inside submit()
                handover = time.perf_counter() - t0
                longest, last = 0.0, t0 + handover
                while len(w.ch.messages) <= before:
                    now = time.perf_counter()
                    longest, last = max(longest, now - last), now
                w.flush(30)
                got.append((handover, longest))
            print("TUNEBENCH_TRACE_FORK=%s  hand-over %s ms; longest stall after it %s ms"
                  % (mode, ", ".join("%.1f" % (h * 1e3) for h, _ in got),
                     ", ".join("%.1f" % (s * 1e3) for _, s in got)))
        del os.environ[trace_writer.FORK_ENV]


def main():
    if "--writer" in sys.argv:
        ap = argparse.ArgumentParser()
        ap.add_argument("--writer", action="store_true")
        ap.add_argument("--rounds", type=int, default=3)
        writer(ap.parse_args().rounds)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--script")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--every", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scripts = [a.script] if a.script else []
        for name, text in (("small_cnn.py", CNN), ("many_ops.py", MANY_OPS)) if not a.script else ():
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(text)
            scripts.append(path)
        for script in scripts:
            got = {m: ([], [], []) for m in MODES}
            for k in range(a.rounds):
                for mode in (MODES if k % 2 == 0 else MODES[::-1]):
                    pauses, median, after = measure(run(a.python, script, a.steps, a.every, mode,
                                                        os.path.join(tmp, "chunks")))
                    got[mode][0].extend(pauses)
                    got[mode][1].append(median)
                    got[mode][2].extend(after)
            print("%s: %d steps, chunks of %d, %d rounds" % (os.path.basename(script), a.steps, a.every, a.rounds))
            for mode in MODES:
                pauses, medians, after = got[mode]
                dur = statistics.median(p[0] for p in pauses)
                step = statistics.median(medians)
                excess = statistics.mean(after)
                print("  TUNEBENCH_TRACE_FORK=%-4s pause %7.1f ms (save %6.1f, fork %5.1f)  step %6.1f ms  "
                      "step after a boundary +%6.1f ms   pause/step %5.2f  excess/step %5.2f"
                      % (mode, dur, statistics.median(p[1] for p in pauses), statistics.median(p[2] for p in pauses),
                         step, excess, dur / step, excess / step))


if __name__ == "__main__":
    main()
