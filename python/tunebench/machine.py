"""What `hello` says about the machine: the device and what records the GPU."""

import os
import platform

import torch


def driver():
    """The NVIDIA driver's version ("580.159.04"), or "" where there is none: a stored gate baseline warns
    when it differs (the same torch on another driver can run at another speed)."""
    try:
        with open("/proc/driver/nvidia/version") as f:
            for word in f.readline().split():
                if word[:1].isdigit() and "." in word:
                    return word
    except OSError:
        pass
    return ""


def device():
    if torch.cuda.is_available():
        return {"kind": "cuda", "name": torch.cuda.get_device_name(0), "cores": os.cpu_count() or 1,
                "sm": torch.cuda.get_device_capability(0)[0], "driver": driver()}
    name = platform.processor() or "cpu"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"kind": "cpu", "name": name, "cores": os.cpu_count() or 1}


def collector(tracing):
    """What records the GPU: torch.profiler's CUDA activity, only with a CUDA device and a trace directory
    (the GUI's status bar shows it as the GPU collector; CPU ops are traced either way with a directory)."""
    if not tracing:
        return {"enabled": False, "reason": "not tracing (no --trace-dir)"}
    if not torch.cuda.is_available():
        return {"enabled": False, "reason": "no CUDA device: torch.profiler records CPU ops only"}
    return {"enabled": True, "reason": "", "kind": "torch.profiler (CUDA activity)"}
