"""DataLoader hooks: where each loader is made (the line to edit), the knobs' values at construction, and
iteration through a proxy that times `__next__` (the data wait), counts samples, and can re-create the
real iterator when a loader knob changes live.

A live change of num_workers / pin_memory / prefetch_factor / persistent_workers is set on the DataLoader object and takes effect
when its iterator is re-created: the proxy does that at its next `__next__` (a new pass over the sampler
starts there: the samples of this epoch may repeat). That is reported as `pending` until it happened.
"""

import time

import torch
from torch.utils.data import DataLoader

from . import source
from .knobs import KnobError, _torch_major

_orig_init = DataLoader.__init__
_orig_iter = DataLoader.__iter__
_run = None

# Our knob id -> DataLoader constructor argument, and how a value text becomes the argument.
_ARGS = {"workers": ("num_workers", int), "pin_memory": ("pin_memory", lambda v: v == "on"),
         "prefetch": ("prefetch_factor", int), "persistent_workers": ("persistent_workers", lambda v: v == "on")}


def batch_size_of(batch):
    """First dimension of the first tensor in a batch (tuples, lists and dicts searched in order)."""
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0]) if batch.dim() > 0 else 1
    if isinstance(batch, (list, tuple)):
        for b in batch:
            n = batch_size_of(b)
            if n:
                return n
    if isinstance(batch, dict):
        for b in batch.values():
            n = batch_size_of(b)
            if n:
                return n
    return 0


def _patched_init(self, *args, **kwargs):
    run = _run
    user_kwargs = dict(kwargs)
    if run is not None and len(args) <= 5:  # num_workers is the 6th positional parameter; kwargs usually
        req = run.requested
        workers = int(req["workers"]) if "workers" in req else kwargs.get("num_workers", 0)
        if "workers" in req:
            kwargs["num_workers"] = workers
        if "pin_memory" in req:
            kwargs["pin_memory"] = req["pin_memory"] == "on"
        if workers > 0:
            if "prefetch" in req:
                kwargs["prefetch_factor"] = int(req["prefetch"])
            if "persistent_workers" in req:
                kwargs["persistent_workers"] = req["persistent_workers"] == "on"
        else:
            # torch refuses these without workers; the user's values come back when workers do.
            kwargs.pop("prefetch_factor", None)
            kwargs.pop("persistent_workers", None)
    _orig_init(self, *args, **kwargs)
    if run is None:
        return
    run.loaders.add(self)
    site = source.caller_site()
    effective = {"num_workers": self.num_workers, "pin_memory": self.pin_memory,
                 "prefetch_factor": getattr(self, "prefetch_factor", None),
                 "persistent_workers": getattr(self, "persistent_workers", False),
                 "batch_size": self.batch_size}
    self._tunebench_site = site
    run.ch.send("source", kind="dataloader", file=site["file"], line=site["line"], code=site["code"],
                kwargs={k: v for k, v in user_kwargs.items() if isinstance(v, (int, float, str, bool, type(None)))},
                effective=effective)
    # The knobs' values are what the first loader really uses (the training loader, usually).
    if len(run.loaders) == 1:
        run.config["workers"] = str(self.num_workers)
        run.config["pin_memory"] = "on" if self.pin_memory else "off"
        run.config["prefetch"] = str(getattr(self, "prefetch_factor", None) or 2)
        run.config["persistent_workers"] = "on" if getattr(self, "persistent_workers", False) else "off"


class _Proxy:
    """Stands in for the DataLoader's iterator in the user's `for` loop."""

    def __init__(self, loader, inner):
        self.loader = loader
        self.inner = inner
        self.recreate = False

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.inner)

    def _renew(self):
        self.shutdown()
        self.inner = _orig_iter(self.loader)
        self.recreate = False
        run = _run
        if run is not None:  # the change took effect: say with what (tests and the GUI read it back)
            run.ch.send("loader", reason="iterator re-created", num_workers=self.loader.num_workers,
                        pin_memory=self.loader.pin_memory, prefetch_factor=getattr(self.loader, "prefetch_factor", None),
                        persistent_workers=bool(getattr(self.loader, "persistent_workers", False)))

    def __next__(self):
        run = _run
        t0 = time.monotonic_ns()
        if self.recreate:
            self._renew()
        if run is not None and run.t_prev_ns is None:
            run.t_prev_ns = t0
        batch = next(self.inner)
        if run is not None:
            run.data_wait_ns += time.monotonic_ns() - t0
            run.samples += batch_size_of(batch)
        return batch

    def shutdown(self):
        shutdown = getattr(self.inner, "_shutdown_workers", None)
        if shutdown:
            try:
                shutdown()
            except Exception:
                pass

    def __getattr__(self, name):  # anything else the script asks of the iterator
        return getattr(self.inner, name)


def _patched_iter(self):
    inner = _orig_iter(self)
    if _run is None:
        return inner
    p = _Proxy(self, inner)
    _run.iterators.add(p)
    return p


def set_loader_option(run, knob, value, live):
    """Applies a loader knob to every DataLoader (now, or at construction for later ones)."""
    arg, conv = _ARGS[knob.id]
    run.requested[knob.id] = value
    if not live or not list(run.loaders):
        return False, "applies when the script creates its DataLoader"
    v = conv(value)
    if arg == "prefetch_factor" and all(loader.num_workers == 0 for loader in run.loaders):
        raise KnobError("prefetch only matters with workers > 0 (set workers first)")
    for loader in list(run.loaders):
        if arg == "prefetch_factor" and loader.num_workers == 0:
            continue
        try:
            if arg == "persistent_workers":
                # DataLoader.__setattr__ refuses it after construction; __iter__ reads it at every call, and the
                # kept iterator is dropped below, so setting the field is what constructing it would have done.
                object.__setattr__(loader, arg, v)
            else:
                setattr(loader, arg, v)
        except ValueError as e:
            raise KnobError(str(e).splitlines()[0])
        if arg == "num_workers" and v > 0 and getattr(loader, "prefetch_factor", None) is None:
            loader.prefetch_factor = int(run.requested.get("prefetch", "2"))  # torch 2.x: None without workers
        if arg == "num_workers" and v == 0 and _torch_major() >= 2:
            loader.prefetch_factor = None
        if getattr(loader, "_iterator", None) is not None:
            loader._iterator = None  # a persistent iterator would keep the old workers
    for p in list(run.iterators):
        p.recreate = True
    return True, "takes effect when the DataLoader's iterator is re-created, at the next batch (a new pass " \
                 "over the sampler starts there)"


def install(run):
    global _run
    _run = run
    DataLoader.__init__ = _patched_init
    DataLoader.__iter__ = _patched_iter


def uninstall():
    global _run
    _run = None
    DataLoader.__init__ = _orig_init
    DataLoader.__iter__ = _orig_iter


def shutdown_all(run):
    for p in list(run.iterators):
        p.shutdown()
