#!/usr/bin/env python3
"""Whether a GPU trace links every kernel to the launch that caused it (not run in CI; scripts/gpu-check.sh's
`links` stage runs it on traces of the same job recorded with different CUPTI kinds).

Reads a trace as `tunebench-cli run --trace` writes it (Kineto's JSON: kernels under cat "kernel", API calls
under "cuda_runtime"/"cuda_driver", each with args.correlation; .gz too) and prints one JSON line:
  kernels            GPU kernels in the trace
  linked             kernels whose correlation id belongs to a host API call in the trace
  launches           host launch calls (names holding "Launch", graph launches included)
  runtime_launches / driver_launches
  double             correlation ids held by more than one host launch call (a launch counted twice)
  graph_launches     cudaGraphLaunch / cuGraphLaunch calls; graph_kernels: kernels they launched
  syncs, sync_us     blocking sync calls (the analysis's list) and their host time
  api_records        every host API record (what the recording paid for)

usage: check_cupti_links.py TRACE [TRACE ...]
"""

import gzip
import json
import sys
from collections import Counter

SYNC = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
        "cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol",
        "cudaMemcpyPeer", "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpyHtoD",
        "cuMemcpyDtoH", "cuMemcpy", "cuMemcpyDtoD", "cuMemcpyPeer"}


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def base_name(name):
    for suffix in ("_v2", "_v3", "_ptsz", "_ptds"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def check(events):
    kernel_corr = []
    api_corr = Counter()
    launch_corr = Counter()
    graph_corr = set()
    out = Counter()
    sync_us = 0.0
    for e in events:
        cat = e.get("cat")
        if e.get("ph") != "X" or cat not in ("kernel", "cuda_runtime", "cuda_driver"):
            continue
        corr = (e.get("args") or {}).get("correlation")
        if cat == "kernel":
            out["kernels"] += 1
            if corr is not None:
                kernel_corr.append(corr)
            continue
        out["api_records"] += 1
        name = base_name(e.get("name", ""))
        if corr is not None:
            api_corr[corr] += 1
        if "Launch" in name:
            out["launches"] += 1
            out["runtime_launches" if cat == "cuda_runtime" else "driver_launches"] += 1
            if corr is not None:
                launch_corr[corr] += 1
            if "GraphLaunch" in name:
                out["graph_launches"] += 1
                if corr is not None:
                    graph_corr.add(corr)
        if name in SYNC:
            out["syncs"] += 1
            sync_us += float(e.get("dur", 0))
    out["linked"] = sum(1 for c in kernel_corr if c in api_corr)
    out["graph_kernels"] = sum(1 for c in kernel_corr if c in graph_corr)
    out["double"] = sum(1 for n in launch_corr.values() if n > 1)
    keys = ("kernels", "linked", "launches", "runtime_launches", "driver_launches", "double", "graph_launches",
            "graph_kernels", "syncs", "api_records")
    r = {k: out[k] for k in keys}
    r["sync_us"] = round(sync_us, 1)
    r["unlinked"] = r["kernels"] - r["linked"]
    return r


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    rc = 0
    for path in argv[1:]:
        try:
            r = check(load(path))
        except (OSError, ValueError, KeyError) as e:
            print("check_cupti_links: %s: %s" % (path, e), file=sys.stderr)
            rc = 1
            continue
        print(json.dumps({"trace": path, **r}))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
