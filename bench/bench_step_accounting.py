#!/usr/bin/env python3
"""What the launcher's per-step accounting holds and costs (not run in CI; python/tests/test_launch.py and
test_step_memory.py check what holds on any machine: the update is timed and nothing around it is, no file is
opened a step).

1. A hand-written update's share: a script brackets its own clip and update (`p -= lr * p.grad` under no_grad,
   or `p.data.add_`) with monotonic_ns and writes the brackets to a file; run under the launcher, each step's
   optim_ns (the update phase the hooks time) against its bracket. Prints the shares' median, min and max:
   most of the bracket is the update's (one step's bracket can take a preemption outside the hooked update:
   0.67 of 2.86 ms once in CI, with the corpus on the other core; the tests asked for a median over 0.25).
2. A step's memory read (python/tunebench/memory.py: the resident set by pread of /proc/self/statm, and its
   JSON), in this process: the best of 5 means of 1000 reads (3-5 us here on a machine busy building C++;
   opening the file each time cost 16 us against 2.5).

usage: bench_step_accounting.py [--steps 40] [--python P]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import textwrap
import timeit

from launcher_messages import ROOT, launch

BY_HAND = textwrap.dedent('''
    import json, sys, time, torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
    x, y = torch.randn(32, 64), torch.randint(0, 4, (32,))
    brackets = []
    for it in range(int(sys.argv[2])):
        model.zero_grad()
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        t0 = time.monotonic_ns()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if it % 2:
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-0.1)
        else:
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
        brackets.append(time.monotonic_ns() - t0)
        with torch.no_grad():
            accuracy = (out.argmax(1) == y).float().mean()
            time.sleep(0.01)
        time.sleep(0.01)
    json.dump(brackets, open(sys.argv[1], "w"))
''')


def update_share(python, steps):
    with tempfile.TemporaryDirectory() as tmp:
        script, brackets = os.path.join(tmp, "by_hand.py"), os.path.join(tmp, "brackets.json")
        with open(script, "w") as f:
            f.write(BY_HAND)
        messages = launch(python, [], script, "bench_step_accounting", script_args=[brackets, str(steps)])
        with open(brackets) as f:
            measured = json.load(f)
    shares = [s["optim_ns"] / b for s, b in zip((m for m in messages if m["type"] == "step"), measured)]
    print("hand-written update: optim_ns / the script's bracket over %d steps: median %.2f, min %.2f, max %.2f"
          % (len(shares), statistics.median(shares), min(shares), max(shares)))


def memory_read():
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from tunebench import memory, state
    reader = memory.StepMemory(state.Run(None, None))
    reader.read()
    best = min(timeit.timeit(lambda: memory.to_json(reader.read()), number=1000) / 1000 for _ in range(5))
    print("a step's memory read and its JSON: %.1f us (best of 5 means of 1000)" % (best * 1e6))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    update_share(a.python, a.steps)
    memory_read()


if __name__ == "__main__":
    main()
