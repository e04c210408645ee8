"""Runs HolisticTraceAnalysis' four analyses on one trace, as a user would: TraceAnalysis on a directory
holding that trace, get_temporal_breakdown, get_idle_time_breakdown, get_comm_comp_overlap and
get_gpu_kernel_breakdown, so that HTA reads the same events as `analyze`:

- include_last_profiler_step=True: by default HTA drops the GPU work of the last ProfilerStep (it calls the
  last step incomplete); ours keeps every step whose GPU work the file holds.
- HTA_DISABLE_NS_ROUNDING=1: by default HTA rounds a nanosecond trace's every event inward to whole
  microseconds (start up, end down); ours reads the nanoseconds.
- a nanosecond trace is rebased before HTA parses it (rebase.py): HTA reads times as doubles, which hold
  only quarter microseconds at today's epoch times.
- the idle breakdown's consecutive_kernel_delay is our min gap, so that its kernel_wait and our launch
  overhead share a threshold.

docs/analysis.md ("Against HTA") gives the effect of HTA's defaults on each trace."""
import logging
import math
import os
import tempfile
import warnings

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"  # read by HTA's parser at parse time

from hta.configs.config import logger as hta_logger  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402

import rebase  # noqa: E402

hta_logger.setLevel(logging.ERROR)  # HTA warns about every trace it parses
# HTA's own pandas calls (inplace=, deprecated by pandas 3) are its business, not this test's.
warnings.filterwarnings("ignore", module=r"hta(\.|$)")


def load(trace_path, include_last_profiler_step=True, exact=True):
    """(HTA's TraceAnalysis of one trace file, the microseconds subtracted from its timestamps). HTA reads a
    directory of per-rank traces; with `exact`, a trace whose times a double cannot hold is rebased first."""
    with tempfile.TemporaryDirectory(prefix="tb-hta-") as d:
        base = 0
        if exact and rebase.needs_rebase(trace_path):
            text, base = rebase.rebase(rebase.read(trace_path))
            with open(os.path.join(d, "trace.json"), "wb") as f:
                f.write(text)
            del text
        else:
            os.symlink(os.path.abspath(trace_path), os.path.join(d, os.path.basename(trace_path)))
        return TraceAnalysis(trace_dir=d, include_last_profiler_step=include_last_profiler_step), base


def figures(a, min_gap_us):
    """HTA's answers, in microseconds; None where HTA has nothing to say (no GPU work)."""
    rank = a.t.get_ranks()[0]
    out = {"rank": rank, "steps": [int(s) for s in a.get_profiler_steps()]}
    try:
        t = a.get_temporal_breakdown(visualize=False).iloc[0]
        out["temporal"] = {"idle": float(t["idle_time(us)"]), "compute": float(t["compute_time(us)"]),
                           "non_compute": float(t["non_compute_time(us)"]), "span": float(t["kernel_time(us)"])}
    except IndexError:  # HTA indexes the first merged kernel: a trace without GPU work raises
        out["temporal"] = None
    try:
        # consecutive_kernel_delay is in the trace's unit (microseconds), whatever HTA's docstring says.
        idle, _ = a.get_idle_time_breakdown(ranks=[rank], visualize=False, consecutive_kernel_delay=min_gap_us)
        per_stream = {}
        for r in idle.itertuples():
            per_stream.setdefault(int(r.stream), {})[r.idle_category] = float(r.idle_time)
        out["idle_per_stream"] = per_stream
    except ValueError:  # no stream to concatenate
        out["idle_per_stream"] = None
    with warnings.catch_warnings():  # no communication: HTA divides 0 by 0 (NaN, which we read as "none")
        warnings.simplefilter("ignore", RuntimeWarning)
        pct = float(a.get_comm_comp_overlap(visualize=False).iloc[0]["comp_comm_overlap_pctg"])
    out["overlap"] = None if math.isnan(pct) else pct / 100
    # Every kernel by name: no "others" folding (num_kernels above any count, duration_ratio 1).
    types, kernels = a.get_gpu_kernel_breakdown(visualize=False, num_kernels=1 << 40, duration_ratio=1.0)
    out["types"] = {r.kernel_type: float(r.sum) for r in types.itertuples()}
    out["kernels"] = {k["name"]: {"type": k["kernel_type"], "sum": float(k["sum (us)"]), "max": float(k["max (us)"]),
                                  "min": float(k["min (us)"]), "mean": float(k["mean (us)"])}
                      for k in kernels.to_dict("records")}
    return out
