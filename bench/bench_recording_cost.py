#!/usr/bin/env python3
"""What recording costs the training it records, TuneBench beside PyTorch's own profiler (not run in CI).

Both sides are measured the same way: in ONE process, windows with recording off and on alternate (off first
in odd pairs, on first in even ones), and the ratio on/off gets a paired t interval on the log ratios.
1. TuneBench: `bench_engine_collector` (the engine's range recorder, and CUPTI with its default kinds on a
   CUDA device) on the engine's model.
2. torch.profiler (Kineto; CPU activity, + CUDA on a GPU) on torchvision's model of the same name, at the same
   batch and settings; the profile is exported after each window, outside its time (as a run pays it once).
On a GPU both take bf16 autocast, channels_last and cuDNN autotune (the launch-bound case where recording
shows most). Prints one line per side and the two ratios last.

usage: bench_recording_cost.py [--model resnet18] [--batch 32] [--window 10] [--pairs 6] [--device auto]
                               [--bench build/bench/bench_engine_collector] [--skip-engine] [--skip-kineto]
"""

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Two-sided 95% Student t quantiles by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(df):
    keys = sorted(k for k in T95 if k <= df)
    return T95[keys[-1]] if keys else T95[1]


def paired(off, on):
    """Geometric mean of on/off per pair with its 95% interval: (ratio, lo, hi)."""
    logs = [math.log(b / a) for a, b in zip(off, on)]
    m = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(m), float("nan"), float("nan")
    h = t95(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(m), math.exp(m - h), math.exp(m + h)


def engine_side(a, device):
    if a.skip_engine:
        return None
    if not os.path.exists(a.bench):
        print(f"tunebench: skipped, no {a.bench} (built with TUNEBENCH_BENCH=OFF?)")
        return None
    settings = f"batch_size={a.batch}"
    if device == "cuda":
        settings += ",cudnn_benchmark=on,amp=bf16,channels_last=on"
    cmd = [a.bench, "--model", a.model, "--data", "synthetic", "--device", device, "--set", settings,
           "--window", str(a.window), "--pairs", str(a.pairs)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    for line in out.stdout.splitlines():
        print("  " + line)
    last = [l for l in out.stdout.splitlines() if l.startswith("recording on / off:")]
    if out.returncode != 0 or not last:
        print(f"tunebench: the bench failed (rc {out.returncode}): {out.stderr.strip()[-300:]}")
        return None
    return last[-1].split(":", 1)[1].strip()


def kineto_side(a, device):
    if a.skip_kineto:
        return None
    import torch
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, a.model)(num_classes=1000).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(a.batch, 3, 224, 224, device=device)
    y = torch.randint(0, 1000, (a.batch,), device=device)
    cuda = device == "cuda"
    if cuda:
        torch.backends.cudnn.benchmark = True
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)

    def step():
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=cuda):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    def window(recording):
        acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
        prof = torch.profiler.profile(activities=acts) if recording else None
        if cuda:
            torch.cuda.synchronize()
        if prof:
            prof.__enter__()
        t0 = time.perf_counter()
        for _ in range(a.window):
            step()
        if cuda:
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        if prof:
            prof.__exit__(None, None, None)
            with tempfile.NamedTemporaryFile(suffix=".json") as f:
                prof.export_chrome_trace(f.name)  # outside the window's time
        return a.window * a.batch / dt

    print(f"torch.profiler: torchvision {a.model} on {device}, batch {a.batch}, {a.pairs} pairs of "
          f"{a.window}-step windows; on = {'CPU + CUDA' if cuda else 'CPU'} activities")
    window(False)  # warm-up, not measured
    off, on = [], []
    for p in range(a.pairs):
        for side in range(2):
            recording = (side == 0) != (p % 2 == 0)
            (on if recording else off).append(window(recording))
        print(f"  pair {p + 1}: off {off[-1]:.1f}, on {on[-1]:.1f} samples/s")
    r, lo, hi = paired(off, on)
    return f"{r:.3f}x [{lo:.3f}, {hi:.3f}] ({a.pairs} pairs)"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet18")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--window", type=int, default=10)
    p.add_argument("--pairs", type=int, default=6)
    p.add_argument("--device", default="auto")
    p.add_argument("--bench", default=os.path.join(ROOT, "build", "bench", "bench_engine_collector"))
    p.add_argument("--skip-engine", action="store_true")
    p.add_argument("--skip-kineto", action="store_true")
    a = p.parse_args()
    device = a.device
    if device == "auto":
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"recording cost: {a.model}, batch {a.batch}, on {device}")
    ours = engine_side(a, device)
    theirs = kineto_side(a, device)
    print(f"tunebench recording on / off: {ours or 'not measured'}")
    print(f"torch.profiler on / off:      {theirs or 'not measured'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
