#!/usr/bin/env python3
"""What listening to torch.compile costs a compile (python/tunebench/hooks/compile_events.py; not run in CI:
python/tests/test_compile_events.py checks what holds on any machine).

A handler on torch's structured-trace logger makes torch build every record it would write for TORCH_TRACE
(graphs printed, guards, generated code) while compiling, and ours parse a few. Each round starts a fresh process
per side, alternating which goes first: it compiles one model (backend aot_eager or inductor), runs one forward and
backward, and prints torch's own figures from torch._dynamo.utils.get_compilation_metrics(): the frames' and
backwards' compile time and, with the handler, `structured_logging_overhead_s` (torch's timing of its records,
our handler's time inside). Prints, per model and backend, the median compile time with and without the handler,
the median paired difference with its range, and the median structured_logging_overhead_s. Nothing else runs
between the two sides; the machine's load is printed.

usage: bench_compile_events.py [--rounds 5] [--models mlp,transformer] [--backends aot_eager,inductor]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r'''
import json, sys, torch
from torch import nn
listen, model_name, backend = sys.argv[1] == "1", sys.argv[2], sys.argv[3]
sent = []
if listen:
    from tunebench.hooks import compile_events
    class Ch:
        def send(self, t, **f): sent.append(f)
    class Run:
        ch = Ch()
    assert compile_events.install(Run())
torch.manual_seed(0)
if model_name == "mlp":
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = nn.Linear(64, 256), nn.Linear(256, 256), nn.Linear(256, 10)
        def forward(self, x):
            return self.c(torch.relu(self.b(torch.relu(self.a(x)))))
    x = torch.randn(32, 64)
else:
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0)
            self.enc = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
            self.head = nn.Linear(64, 10)
        def forward(self, x):
            return self.head(self.enc(x).mean(1))
    x = torch.randn(8, 32, 64)
m = torch.compile(M(), backend=backend)
m(x).sum().backward()
ms = torch._dynamo.utils.get_compilation_metrics()
fwd = sum(c.entire_frame_compile_time_s or 0 for c in ms)
bwd = sum((c.inductor_compile_time_s or 0) for c in ms if c.is_forward is False)
over = sum(c.structured_logging_overhead_s or 0 for c in ms)
print(json.dumps({"compile_s": fwd, "bwd_inductor_s": bwd, "overhead_s": over, "compiles": len(ms),
                  "messages": len(sent)}))
'''


def one(python, listen, model, backend):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.run([python, "-W", "ignore", "-c", CHILD, "1" if listen else "0", model, backend],
                       capture_output=True, text=True, env=env, timeout=600)
    if p.returncode:
        raise SystemExit(p.stderr[-2000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--models", default="mlp,transformer")
    ap.add_argument("--backends", default="aot_eager,inductor")
    ap.add_argument("--python", default=sys.executable)
    o = ap.parse_args()
    print("load average before: %s" % open("/proc/loadavg").read().split()[:3])
    for backend in o.backends.split(","):
        for model in o.models.split(","):
            one(o.python, False, model, backend)  # warm Inductor's caches: every round then measures the same
            on, off, over, diffs = [], [], [], []
            for r in range(o.rounds):
                order = (True, False) if r % 2 == 0 else (False, True)
                got = {listen: one(o.python, listen, model, backend) for listen in order}
                on.append(got[True]["compile_s"])
                off.append(got[False]["compile_s"])
                over.append(got[True]["overhead_s"])
                diffs.append(got[True]["compile_s"] - got[False]["compile_s"])
            med = statistics.median
            print("%-9s %-11s compile %.3f s with the handler, %.3f s without; paired difference median %+.3f s "
                  "(%+.3f..%+.3f), %+.1f%%; structured_logging_overhead_s median %.3f s (%.1f%% of the compile); "
                  "%d compiles, %d messages"
                  % (backend, model, med(on), med(off), med(diffs), min(diffs), max(diffs), 100 * med(diffs) / med(off),
                     med(over), 100 * med(over) / med(on), got[True]["compiles"], got[True]["messages"]))
    print("load average after: %s" % open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
