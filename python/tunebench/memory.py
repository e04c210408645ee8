"""What the process holds in memory after a step: the `memory` object of a script's `step` message
(docs/protocol.md), with the keys the engine's own steps use (engine/src/step_memory.cpp), each left out when
it is not measured.

* host_rss: the resident set, /proc/self/statm's second field times the page size. The file is opened once
  and read again with pread (2.5 µs a step here; opening it each time was 16 µs).
* host_heap is left out: glibc's mallinfo2 walks every free chunk under the arena lock (0.9 µs on a fresh
  heap, 760 µs here once 10 000 freed tensor blocks sat in its bins), needs glibc 2.33, and reads glibc's
  idle arena when jemalloc or tcmalloc is preloaded (the cpu_allocator knob).
* On CUDA, only once the script itself has initialized CUDA (a CPU run, or a machine without a GPU, never
  calls a CUDA API here): the caching allocator's allocated and reserved bytes, the step's peak (its peak is
  reset after each read, so the next read's peak is that step's own), the cudaMalloc retries and the OOMs so
  far (counts), and the device's size. The device is that of the parameters of the optimizers the launcher
  saw (else of a module that trained, else the current device). The nested form of the statistics is read:
  torch.cuda.memory_stats builds, flattens and sorts every one of its keys from it.

Everything here runs on the training thread between two steps (in neither's wall_ns)."""

import os

import torch

# A failure that means an allocator ran out: CUDA's (torch.OutOfMemoryError; torch.cuda.OutOfMemoryError on an
# older torch), the CPU allocator's (a RuntimeError with this text), Python's own (numpy's, too).
_OOM_TYPES = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                               getattr(torch.cuda, "OutOfMemoryError", None), MemoryError) if t is not None)
_CPU_OOM_TEXT = "DefaultCPUAllocator: can't allocate memory"


def is_out_of_memory(e):
    return isinstance(e, _OOM_TYPES) or (isinstance(e, RuntimeError) and _CPU_OOM_TEXT in str(e))


def to_json(memory):
    """The object as JSON text, formatted by hand like the step line it joins (every value is an int)."""
    return "{" + ", ".join('"%s": %d' % kv for kv in memory.items()) + "}"


class StepMemory:
    """Reads the memory after a step (one per run, on the training thread)."""

    def __init__(self, run):
        self.run = run
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        self._statm = None        # fd of /proc/self/statm (None: not open yet; -1: unreadable)
        self._cuda = None         # torch.cuda.is_available(), asked at the first read
        self._device = None       # the CUDA device read, once found from a CUDA parameter
        self._total = {}          # CUDA device -> its size in bytes
        # A forked child (a DataLoader worker) would read the parent's statm through the inherited fd: it
        # reports no steps, but must not use ours.
        os.register_at_fork(after_in_child=self._forget)

    def read(self):
        m = {}
        rss = self._rss()
        if rss is not None:
            m["host_rss"] = rss
        if self._cuda is None:
            self._cuda = torch.cuda.is_available()
        if self._cuda and torch.cuda.is_initialized():
            try:
                self._read_cuda(m)
            except Exception as e:  # a measurement of ours must never end the run: the device keys stay out
                self._cuda = False
                self.run.warn_once("memory", "device memory not measured: %s: %s" % (type(e).__name__, e))
        return m

    # --- the host ------------------------------------------------------------------------------------------
    def _rss(self):
        fd = self._statm
        if fd is None:
            try:
                fd = self._statm = os.open("/proc/self/statm", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except OSError:  # no procfs (macOS): host_rss is left out
                fd = self._statm = -1
        if fd < 0:
            return None
        try:
            return int(os.pread(fd, 128, 0).split()[1]) * self._page
        except (OSError, IndexError, ValueError):
            return None

    def _forget(self):
        self._statm = None  # the child's first read opens its own (the inherited fd is the parent's)

    # --- the device ----------------------------------------------------------------------------------------
    def _read_cuda(self, m):
        dev = self._cuda_device()
        stats = torch.cuda.memory_stats_as_nested_dict(dev)
        if not stats:
            return
        allocated = stats.get("allocated_bytes", {}).get("all", {})
        reserved = stats.get("reserved_bytes", {}).get("all", {})
        for key, value in (("device_allocated", allocated.get("current")), ("device_reserved", reserved.get("current")),
                           ("device_peak", allocated.get("peak")),
                           ("device_alloc_retries", stats.get("num_alloc_retries")),
                           ("device_ooms", stats.get("num_ooms"))):
            if isinstance(value, int):
                m[key] = value
        torch.cuda.reset_peak_memory_stats(dev)
        total = self._total.get(dev)
        if total is None:
            total = self._total[dev] = int(torch.cuda.get_device_properties(dev).total_memory)
        m["device_total"] = total

    def _cuda_device(self):
        if self._device is not None:
            return self._device
        dev = _parameter_device(self.run)
        if dev is not None:
            self._device = dev  # a model seldom moves between GPUs: found once
            return dev
        return torch.cuda.current_device()


def _parameter_device(run):
    """The CUDA device index of the parameters the launcher knows of (None: none is on a CUDA device)."""
    params = []
    for opt in list(run.optimizers):
        for group in opt.param_groups:
            params.extend(group["params"][:1])
    for module in list(run.trained_modules):
        p = next(module.parameters(), None)
        if p is not None:
            params.append(p)
    for p in params:
        if p.device.type == "cuda":
            return p.device.index if p.device.index is not None else torch.cuda.current_device()
    return None
