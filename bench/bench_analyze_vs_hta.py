#!/usr/bin/env python3
"""`tunebench-cli analyze` against HolisticTraceAnalysis (HTA) on the same trace, as a user runs each: the CLI
process (`analyze TRACE --json OUT`), and a fresh Python process that imports HTA, loads the trace and runs
the four analyses ours answers (temporal breakdown, idle time breakdown, comm/comp overlap, kernel
breakdown), with every step kept as in tests/hta. Rounds alternate which tool goes first; each round gives a
ratio HTA / ours, and the median, min and max of those ratios are printed with both tools' times (HTA's
also without its interpreter start and imports: load + analyses inside the process).

usage: bench_analyze_vs_hta.py --cli build/app/tunebench-cli [--python PY] [--rounds 5] [--trace T.json.gz]
PY: an interpreter that imports hta (default: this one). Never run by CI: the machine is shared, so read the
figures with its load in mind."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TRACE = os.path.join(HERE, "..", "tests", "testdata", "kineto_ddp_2rank_rank1.json.gz")


def hta_worker(trace):
    """Runs in the child: imports, loads and analyses; prints its own timings as JSON."""
    t0 = time.perf_counter()
    import logging
    import warnings
    warnings.filterwarnings("ignore")
    from hta.configs.config import logger
    from hta.trace_analysis import TraceAnalysis
    logger.setLevel(logging.ERROR)
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:  # HTA reads a directory of per-rank traces
        os.symlink(os.path.abspath(trace), os.path.join(d, os.path.basename(trace)))
        a = TraceAnalysis(trace_dir=d, include_last_profiler_step=True)
    t2 = time.perf_counter()
    rank = a.t.get_ranks()[0]
    a.get_temporal_breakdown(visualize=False)
    a.get_idle_time_breakdown(ranks=[rank], visualize=False, consecutive_kernel_delay=2)
    a.get_comm_comp_overlap(visualize=False)
    a.get_gpu_kernel_breakdown(visualize=False)
    t3 = time.perf_counter()
    print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "analyses_s": t3 - t2}))


def timed(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr[-1000:]}")
    return wall, p.stdout


def spread(xs, unit="s"):
    return f"median {statistics.median(xs):.3f} {unit} (min {min(xs):.3f}, max {max(xs):.3f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--hta-worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.hta_worker:
        return hta_worker(args.hta_worker)
    trace = os.path.abspath(args.trace)
    out = os.path.join(tempfile.mkdtemp(prefix="tb-bench-hta-"), "analysis.json")
    ours_cmd = [args.cli, "analyze", trace, "--json", out]
    hta_cmd = [args.python, os.path.abspath(__file__), "--cli", args.cli, "--hta-worker", trace]
    timed(ours_cmd)  # warm the page cache for both: the trace and the binaries
    timed(hta_cmd)
    ours, hta, hta_inside, ratios, inside_ratios = [], [], [], [], []
    for r in range(args.rounds):
        order = [("ours", ours_cmd), ("hta", hta_cmd)]
        if r % 2:
            order.reverse()
        got = {}
        for name, cmd in order:
            got[name] = timed(cmd)
        o, (h, report) = got["ours"][0], got["hta"]
        inside = json.loads(report.strip().splitlines()[-1])
        ours.append(o)
        hta.append(h)
        hta_inside.append(inside["load_s"] + inside["analyses_s"])
        ratios.append(h / o)
        inside_ratios.append(hta_inside[-1] / o)
        print(f"round {r + 1}: ours {o:.3f} s, HTA {h:.3f} s (import {inside['import_s']:.2f}, load "
              f"{inside['load_s']:.2f}, analyses {inside['analyses_s']:.2f}), ratio {h / o:.1f}x", flush=True)
    print(f"\ntrace: {os.path.relpath(trace)} ({os.path.getsize(trace) / 1e6:.1f} MB), {args.rounds} rounds, alternating")
    print(f"ours (tunebench-cli analyze --json):        {spread(ours)}")
    print(f"HTA (process: import + load + 4 analyses):  {spread(hta)}")
    print(f"HTA (in process: load + 4 analyses):        {spread(hta_inside)}")
    print(f"ratio HTA / ours, per round:                {spread(ratios, 'x')}")
    print(f"ratio HTA in process / ours, per round:     {spread(inside_ratios, 'x')}")


if __name__ == "__main__":
    main()
