#!/usr/bin/env python3
"""Wall time of `tunebench-cli analyze` as a user runs it (process start included), against the goals of docs/analysis.md ("Speed"):
a small trace <= 0.2 s, 1 M events <= 1 s (JSON or gzip), and the real gzipped Kineto trace the review timed
at ~2 s (HTA's ddp_2rank_rank1: 3.0 MB gz, 53.7 MB JSON, 216 k events) <= 0.7 s, taken from ../shared/traces
when it is there.

Generates Kineto-shaped traces in /tmp (a training loop: ProfilerStep, DataLoader wait, cpu_ops, one
cudaLaunchKernel per kernel with its correlation id, kernels on two streams), runs the CLI --rounds times
each and prints the median and min wall time and the max RSS. Also times `--help` (pure process start).

Then where the time goes, on the 0.1 M and 1 M event traces: bench_analysis_passes (built beside the other
benches) loads each --rounds times and runs analyze()'s passes one by one, and prints per step (load_trace,
then scope, gpu, steps, window, host, outside, idle, per_step, stats, regions, memory, findings, lane, notes,
their sum and analyze() itself) the median and min wall ms, the median CPU ms and the share of the passes' sum (load_trace:
its ratio to the sum), and whether the passes gave analyze()'s result. Printed, never asserted.
Never run by CI: the machine is shared, so read the figures with the noise in mind.

usage: bench_analyze_cli.py [--cli build/app/tunebench-cli] [--passes build/bench/bench_analysis_passes]
                            [--rounds 5] [--trace EXTRA.json.gz ...]
"""
import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def generate(path, events, gz):
    """Writes a Kineto trace with about `events` events; returns the count."""
    kernels = ["volta_sgemm_128x64_nn", "void at::native::vectorized_elementwise_kernel<4>",
               "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float>", "void at::native::reduce_kernel<512, 1>"]
    out = []
    ts = 1712195495000000.0
    corr = 1000
    step = 0
    n = 0
    while n < events:
        step_start = ts
        body = []
        body.append({"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
                     "pid": 1, "tid": 1, "ts": ts, "dur": 200.0})
        ts += 200.0
        gpu_t = ts + 50.0
        for i in range(60):
            corr += 1
            body.append({"ph": "X", "cat": "cpu_op", "name": "aten::op", "pid": 1, "tid": 1, "ts": ts, "dur": 8.0})
            body.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                         "ts": ts + 1.0, "dur": 5.0, "args": {"correlation": corr}})
            dur = 12.0 + (i % 7)
            gpu_t = max(gpu_t, ts + 10.0)
            body.append({"ph": "X", "cat": "kernel", "name": kernels[i % len(kernels)], "pid": 0, "tid": 7 + (i % 2) * 6,
                         "ts": gpu_t, "dur": dur,
                         "args": {"device": 0, "stream": 7 + (i % 2) * 6, "correlation": corr}})
            gpu_t += dur + 1.0
            ts += 10.0
        out.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                    "ts": step_start, "dur": ts - step_start})
        out.extend(body)
        n += len(body) + 1
        step += 1
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Generated GPU", "computeMajor": 8, "computeMinor": 0}],
           "traceEvents": out}
    data = json.dumps(doc).encode()
    opener = gzip.open if gz else open
    with opener(path, "wb") as f:
        f.write(data)
    return n


def run(cmd, rounds):
    walls = []
    rss = 0
    for _ in range(rounds):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        walls.append(time.perf_counter() - t0)
        if p.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}: {p.stderr.decode()[-300:]}")
        rss = max(rss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return statistics.median(walls), min(walls), rss


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(here, "..", "build", "app", "tunebench-cli"))
    ap.add_argument("--passes", default=os.path.join(here, "..", "build", "bench", "bench_analysis_passes"),
                    help="the per-pass bench (bench_analysis_passes.cpp)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--trace", action="append", default=[], help="also time this trace")
    a = ap.parse_args()
    cases = [("small (3 k events)", "/tmp/tb_bench_small.json", 3000, False, 0.2),
             ("0.1 M events (json)", "/tmp/tb_bench_100k.json", 100000, False, None),
             ("1 M events (json)", "/tmp/tb_bench_1m.json", 1000000, False, 1.0),
             ("1 M events (gz)", "/tmp/tb_bench_1m.json.gz", 1000000, True, 1.0)]
    real = os.path.join(here, "..", "..", "shared", "traces", "kineto_ddp_2rank_rank1.json.gz")
    print(f"{'case':28} {'size MB':>8} {'median s':>9} {'min s':>7} {'goal s':>7}")
    med, mn, _ = run([a.cli, "--help"], a.rounds)
    print(f"{'--help (process start)':28} {'':>8} {med:9.3f} {mn:7.3f}")
    for name, path, n, gz, goal in cases:
        if not os.path.exists(path):
            generate(path, n, gz)
        med, mn, rss = run([a.cli, "analyze", path], a.rounds)
        print(f"{name:28} {os.path.getsize(path) / 1e6:8.1f} {med:9.3f} {mn:7.3f} " + (f"{goal:7.2f}" if goal else ""))
    if os.path.exists(real):
        med, mn, rss = run([a.cli, "analyze", real], a.rounds)
        print(f"{'ddp_2rank_rank1 (real, gz)':28} {os.path.getsize(real) / 1e6:8.1f} {med:9.3f} {mn:7.3f} {0.7:7.2f}")
    for path in a.trace:
        med, mn, rss = run([a.cli, "analyze", path], a.rounds)
        print(f"{os.path.basename(path)[:28]:28} {os.path.getsize(path) / 1e6:8.1f} {med:9.3f} {mn:7.3f}")
    print()
    if not os.path.exists(a.passes):
        print(f"per pass: {a.passes} is not built (scripts/bench.sh builds the benches)")
        return
    print("per pass (load_trace, then analyze()'s passes one by one):", flush=True)
    p = subprocess.run([a.passes, "--rounds", str(a.rounds), "/tmp/tb_bench_100k.json", "/tmp/tb_bench_1m.json"])
    if p.returncode != 0:
        sys.exit(f"failed: {a.passes} (exit {p.returncode})")


if __name__ == "__main__":
    main()
