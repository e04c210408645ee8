#!/usr/bin/env python3
"""Data-parallel benchmark (not run in CI; docs/distributed.md): 1 rank against 2 ranks of `tunebench-cli run`.

Both take the same per-rank batch on the same JPEG folder; the 2-rank run trains on twice the samples per step
(each rank its own shard) and all-reduces the gradients with DDP's Reducer over Gloo. Runs alternate
(1, 2, 1, 2, ...) so drift on this shared machine hits both; prints each run's group throughput (the measured
window's samples/s summed over the ranks), the median 2-rank/1-rank ratio and its min..max over rounds.

On a 2-core machine, expect little or no speed-up: the ranks split the same 2 cores (each gets 1 intra-op
thread instead of 2), and the all-reduce and the buffer broadcasts are extra work on those cores. Ranks pay off
when each one has its own device (a GPU per rank) or its own cores.

--live compares a live group (`serve --ranks 2`, rank 0 ordering every step through the rendezvous store)
with `run --ranks 2` instead: the cost of the orders. The live rate is taken from the step messages' arrival
times after the first `--steps` / 3 steps (the warm-up).

--tune measures what a tune of ranks decides in its budget, which the tests (tests/engine/test_e2e_ranks.cpp)
no longer assert because it depends on the machine's speed and load: per round, `tune --ranks 2` of the three
DDP knobs on a live group (--budget 40) and in fresh groups (--fresh-groups --budget 70), and a one-process
tune of the `ranks` knob (--budget 60); each prints the knobs tried, those skipped for the budget, and its
elapsed time against its budget. It ends with how often each tune tried its first knob (bucket_cap_mb, or
ranks) over the rounds. These use mnist_cnn on 48 JPEGs of 32x32 with batch 4 (the tests' workload), not
--model.

--failures measures how fast a group ends when a rank dies (the tests keep only a hang guard): per round, a
`run --ranks 2` whose rank 1 kills itself before step 3 (TUNEBENCH_TEST_KILL_RANK=1:3) with --dist-timeout 10
(the seconds it takes against the timeout rank 0 waits out for rank 1's result), and a `serve --ranks 2` whose
follower is killed after step 4 (seconds from the kill to `done`). Prints each, then the median, min and max.

usage: bench_ranks.py [--cli build/app/tunebench-cli] [--model resnet18] [--images 256] [--size 64x64]
                      [--input 3,32,32] [--batch 16] [--steps 30] [--rounds 3] [--live | --tune | --failures]
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time

from bench_data import cached_dataset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(a, data, ranks, out):
    cmd = [a.cli, "run", "--model", a.model, "--data", "imagefolder:" + data, "--input", a.input,
           "--steps", str(a.steps), "--warmup", "5", "--set", "batch_size=%d,workers=0" % a.batch, "--json", out]
    if ranks > 1:
        cmd += ["--ranks", str(ranks)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
    with open(out) as f:
        d = json.load(f)
    return d["window"]["samples_per_s"]


def run_live(a, data):
    cmd = [a.cli, "serve", "--model", a.model, "--data", "imagefolder:" + data, "--input", a.input,
           "--steps", str(a.steps), "--warmup", "5", "--set", "batch_size=%d,workers=0" % a.batch, "--ranks", "2"]
    # stdin stays open: serve ends when it closes.
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    arrived, samples = [], []
    for line in p.stdout:
        if line.strip():
            m = json.loads(line)
            if m.get("type") == "step":
                arrived.append(time.monotonic())
                samples.append(m["samples"])  # the group's
    p.wait(timeout=900)
    skip = a.steps // 3
    return sum(samples[skip + 1:]) / (arrived[-1] - arrived[skip])


def tune_once(a, data, extra, budget, knobs):
    """One `tune` of the tests' workload: (knobs tried, knobs skipped for the budget, elapsed s, ended line)."""
    out = os.path.join(tempfile.gettempdir(), "tunebench-bench-ranks-tune.json")
    cmd = [a.cli, "tune", "--model", "mnist_cnn", "--data", "imagefolder:" + data, "--input", "1,28,28",
           "--warmup", "2", "--dist-timeout", "20", "--set", "batch_size=4", "--knobs", knobs, "--budget",
           str(budget), "--rounds", "2", "--json", out] + extra
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
    elapsed = time.monotonic() - t0
    with open(out) as f:
        j = json.load(f)
    tried = sorted({t["knob"] for t in j["trials"] if t["knob"]})
    budget_skipped = sorted({s["knob"] for s in j.get("skipped", []) if s.get("reason", "").startswith("budget")})
    return tried, budget_skipped, elapsed, j.get("ended", "")


def bench_tune(a):
    data = cached_dataset(a.cli, "ranks-tests", 48, "32x32", classes=4)
    ddp = "bucket_cap_mb,comm_hook,static_graph"
    tunes = [("live group, budget 40", ["--ranks", "2"], 40, ddp, "bucket_cap_mb"),
             ("fresh groups, budget 70", ["--ranks", "2", "--fresh-groups"], 70, ddp, "bucket_cap_mb"),
             ("one process, ranks knob, budget 60", [], 60, "ranks", "ranks")]
    first_tried = {name: 0 for name, *_ in tunes}
    print("cores: %d; mnist_cnn, batch 4 per rank, 48 JPEGs of 32x32 (%s)" % (os.cpu_count(), data))
    for r in range(a.rounds):
        for name, extra, budget, knobs, first in tunes:
            tried, skipped, elapsed, ended = tune_once(a, data, extra, budget, knobs)
            first_tried[name] += first in tried
            print("round %d: %s: tried %s, skipped for the budget %s, %.1f s of %d s (%+.0f%%); %s" %
                  (r + 1, name, tried or "none", skipped or "none", elapsed, budget, 100 * (elapsed / budget - 1),
                   ended[:100]))
    for name, *_, first in tunes:
        print("%s: tried %s in %d of %d rounds" % (name, first, first_tried[name], a.rounds))


def killed_rank_run(a, data):
    out = os.path.join(tempfile.gettempdir(), "tunebench-bench-ranks-killed.json")
    cmd = [a.cli, "run", "--model", "mnist_cnn", "--data", "imagefolder:" + data, "--input", "1,28,28", "--steps",
           "6", "--warmup", "2", "--set", "batch_size=4", "--json", out, "--ranks", "2", "--dist-timeout", "10"]
    t0 = time.monotonic()
    r = subprocess.run(cmd, env=dict(os.environ, TUNEBENCH_TEST_KILL_RANK="1:3"), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=300)
    assert r.returncode == 1, "a killed rank's run must fail, got exit %d" % r.returncode
    return time.monotonic() - t0


def killed_follower_serve(a):
    cmd = [a.cli, "serve", "--model", "mnist_cnn", "--data", "synthetic", "--set", "batch_size=4", "--warmup", "1",
           "--drift-steps", "0", "--ranks", "2", "--dist-timeout", "20"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    steps, killed = 0, None
    for line in p.stdout:
        if not line.strip():
            continue
        m = json.loads(line)
        if m.get("type") == "step":
            steps += 1
            if steps == 4:
                with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
                    ranks = sorted(int(x) for x in f.read().split())
                os.kill(ranks[1], signal.SIGKILL)
                killed = time.monotonic()
        if m.get("type") == "done":
            break
    done = time.monotonic()
    p.stdin.close()
    p.wait(timeout=60)
    return done - killed


def bench_failures(a):
    data = cached_dataset(a.cli, "ranks-tests", 48, "32x32", classes=4)
    runs, serves = [], []
    print("cores: %d; mnist_cnn, batch 4 per rank" % os.cpu_count())
    for r in range(a.rounds):
        runs.append(killed_rank_run(a, data))
        serves.append(killed_follower_serve(a))
        print("round %d: run with rank 1 killed ended after %.1f s (timeout 10 s); serve's follower killed: done "
              "%.2f s later (timeout 20 s)" % (r + 1, runs[-1], serves[-1]))
    for name, xs, timeout in (("killed rank's run", runs, 10), ("killed follower's serve", serves, 20)):
        print("%s: median %.2f s (min %.2f, max %.2f over %d rounds), collective timeout %d s" %
              (name, statistics.median(xs), min(xs), max(xs), len(xs), timeout))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "tunebench-cli"))
    p.add_argument("--model", default="resnet18")
    p.add_argument("--images", type=int, default=256)
    p.add_argument("--size", default="64x64")
    p.add_argument("--input", default="3,32,32")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--live", action="store_true", help="live group (serve --ranks 2) against run --ranks 2")
    p.add_argument("--tune", action="store_true", help="what tunes of ranks decide in their budgets")
    p.add_argument("--failures", action="store_true", help="how fast a group ends when a rank dies")
    a = p.parse_args()
    if a.tune:
        return bench_tune(a)
    if a.failures:
        return bench_failures(a)
    data = cached_dataset(a.cli, "ranks", a.images, a.size)
    out = os.path.join(tempfile.gettempdir(), "tunebench-bench-ranks.json")
    ratios = []
    print("cores: %d; %s, batch %d per rank, %d steps, %s" % (os.cpu_count(), a.model, a.batch, a.steps, data))
    if a.live:
        for r in range(a.rounds):
            fresh = run(a, data, 2, out)
            live = run_live(a, data)
            ratios.append(live / fresh)
            print("round %d: run --ranks 2 %.1f samples/s, serve --ranks 2 %.1f samples/s, ratio %.3f" %
                  (r + 1, fresh, live, live / fresh))
        print("live / run: median %.3f (min %.3f, max %.3f over %d rounds)" %
              (statistics.median(ratios), min(ratios), max(ratios), len(ratios)))
        return
    for r in range(a.rounds):
        one = run(a, data, 1, out)
        two = run(a, data, 2, out)
        ratios.append(two / one)
        print("round %d: 1 rank %.1f samples/s, 2 ranks %.1f samples/s, ratio %.2f" % (r + 1, one, two, two / one))
    print("2 ranks / 1 rank: median %.2f (min %.2f, max %.2f over %d rounds)" %
          (statistics.median(ratios), min(ratios), max(ratios), len(ratios)))
    if os.cpu_count() and os.cpu_count() <= 2:
        print("note: %d cores: the two ranks share them (1 intra-op thread each) and add the all-reduce, so no "
              "speed-up is expected here; each rank needs its own GPU or cores to gain." % os.cpu_count())


if __name__ == "__main__":
    main()
