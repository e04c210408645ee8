"""DataLoader hooks: where each loader is made (the line to edit), the knobs' values at construction, and its
iterators' batches: the time in each `__next__` (the data wait), the samples, and the end of a pass - the
events a step is made of (iterations.py).

The iterator the script gets is DataLoader's own (its type and methods unchanged): the timing is a wrapper of
the iterator base class's `__next__`, and a registry (weak, by iterator) says which loader it belongs to.

A live change of num_workers / pin_memory / prefetch_factor / persistent_workers is set on the DataLoader object and takes effect
when its iterator is re-created: the script's iterator does that at its next `__next__` (a new pass over the
sampler starts there: the samples of this epoch may repeat) and hands out the new one's batches from then on.
That is reported as `pending` until it happened.
"""

import functools
import time
import weakref

import torch
from torch.utils.data import DataLoader
from torch.utils.data.dataloader import _BaseDataLoaderIter

from .. import source
from . import loader_lanes, loader_parts, loader_receive
from .reporter import Reporter
from ..knob_errors import KnobError, torch_major as _torch_major
from ..knob_table import ROWS, dataloader_args

_orig_init = DataLoader.__init__
_orig_iter = DataLoader.__iter__
_orig_next = _BaseDataLoaderIter.__next__
_r = Reporter()  # the run, the tracker, on_error (reporter.py)
_fail = _r.fail


class _IterInfo:
    """What we know of one of the script's DataLoader iterators."""

    __slots__ = ("loader", "created_ns", "first", "recreate", "replacement")

    def __init__(self, loader, created_ns):
        self.loader = loader
        self.created_ns = created_ns
        self.first = True          # its next batch is the first of a pass: the wait counts from its creation
        self.recreate = False      # a loader knob changed: replace the real iterator at the next batch
        self.replacement = None    # the iterator that hands out the batches after a live change


_iters = weakref.WeakKeyDictionary()

# Our knob id -> DataLoader constructor argument, and how a value text becomes the argument.
# The loader knobs and the DataLoader argument each is (the knob table's dataloader_arg); those that act only
# with worker processes (the table's tuner "needs": prefetch, persistent_workers, in_order).
_ARGS = dataloader_args()
_WITH_WORKERS = [k for k in _ARGS if ROWS[k]["tuner"].get("needs") == "workers"]


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


@functools.wraps(_orig_init)
def _patched_init(self, *args, **kwargs):
    run = _r.run
    user_kwargs = dict(kwargs)
    if run is not None and len(args) <= 5:  # num_workers is the 6th positional parameter; kwargs usually
        req = run.requested
        workers = int(req["workers"]) if "workers" in req else kwargs.get("num_workers", 0)
        for kid, (arg, conv) in _ARGS.items():
            if kid in req and (workers > 0 or kid not in _WITH_WORKERS):
                kwargs[arg] = conv(req[kid])
        if workers == 0 and "workers" in req:
            # We took the workers away, and torch refuses their arguments without them; the user's values come
            # back when workers do. (Without a knob the script's own arguments pass as they are, errors included.)
            for kid in _WITH_WORKERS:
                kwargs.pop(_ARGS[kid][0], None)
    _orig_init(self, *args, **kwargs)
    if run is None:
        return
    run.loaders.add(self)
    try:
        loader_parts.attach(self)
    except Exception as e:  # noqa: BLE001 - ours: the loader runs as it would without the breakdown
        _fail(e)
    site = source.caller_site()
    effective = dict({arg: getattr(self, arg, None) for arg, _ in _ARGS.values()}, batch_size=self.batch_size)
    run.ch.send("source", kind="dataloader", file=site["file"], line=site["line"], code=site["code"],
                kwargs={k: v for k, v in user_kwargs.items() if isinstance(v, (int, float, str, bool, type(None)))},
                effective=effective)
    # The knobs' values are what the first loader really uses (the training loader, usually).
    if len(run.loaders) == 1:
        run.config["workers"] = str(self.num_workers)
        run.config["pin_memory"] = "on" if self.pin_memory else "off"
        run.config["prefetch"] = str(getattr(self, "prefetch_factor", None) or 2)
        run.config["persistent_workers"] = "on" if getattr(self, "persistent_workers", False) else "off"


def unhooked(*args, **kwargs):
    """A DataLoader made past these hooks: not the script's (no knob, no report); TuneBench's own probe."""
    loader = DataLoader.__new__(DataLoader)
    _orig_init(loader, *args, **kwargs)
    return loader


def _renew(info, it):
    """Shuts down the workers of the iterator in use and makes a new one under the loader's new options."""
    shutdown(info.replacement or it)
    loader = info.loader
    info.replacement = _orig_iter(loader)
    info.recreate = False
    run = _r.run
    if run is not None:  # the change took effect: say with what (tests and the GUI read it back)
        run.ch.send("loader", reason="iterator re-created", num_workers=loader.num_workers,
                    pin_memory=loader.pin_memory, prefetch_factor=getattr(loader, "prefetch_factor", None),
                    persistent_workers=bool(getattr(loader, "persistent_workers", False)))


@functools.wraps(_orig_next)
def _patched_next(self):
    tracker = _r.tracker
    info = _iters.get(self) if tracker is not None else None
    if info is None:
        return _orig_next(self)
    try:
        t = time.monotonic_ns()
        if info.first:
            info.first = False
            t = min(t, info.created_ns)
        t0 = tracker.fetch_start(info.loader, t)
        if info.recreate:
            _renew(info, self)
    except Exception as e:  # noqa: BLE001 - ours: never the script's problem
        _fail(e)
        return _orig_next(info.replacement or self)
    try:
        batch = _orig_next(info.replacement or self)
    except StopIteration:
        try:
            tracker.pass_end(info.loader, time.monotonic_ns())
        except Exception as e:  # noqa: BLE001
            _fail(e)
        raise
    try:
        # A weak reference to the iterator: a loop holds it; `next(iter(loader))` drops it at once, and the
        # script then iterates on that batch itself (iterations.py).
        t1 = time.monotonic_ns()
        tracker.fetch_end(info.loader, t0, t1, batch_size_of(batch), weakref.ref(self))
        if loader_lanes.on():  # a chunk records: the queue the batch came out of, on the timeline
            loader_lanes.queue_depth(info.replacement or self, t1)
        if loader_parts.on():  # the batch a probe takes through a worker at the run's end (num_workers=0)
            loader_receive.keep(info.loader, batch)
    except Exception as e:  # noqa: BLE001
        _fail(e)
    return batch



def shutdown(it):
    fn = getattr(it, "_shutdown_workers", None)
    if fn:
        try:
            fn()
        except Exception:
            pass


@functools.wraps(_orig_iter)
def _patched_iter(self):
    t = time.monotonic_ns()
    it = _orig_iter(self)
    if _r.run is None or not isinstance(it, _BaseDataLoaderIter):
        return it
    info = _iters.get(it)
    if info is None or info.loader is not self:
        _iters[it] = _IterInfo(self, t)
        _r.run.iterators.add(it)
    else:  # persistent workers: the same iterator, reset for a new pass
        info.created_ns, info.first = t, True
    return it


def set_loader_option(run, knob, value, live):
    """Applies a loader knob to every DataLoader (now, or at construction for later ones)."""
    arg, conv = _ARGS[knob.id]
    run.requested[knob.id] = value
    if not live or not list(run.loaders):
        return False, "applies when the script creates its DataLoader"
    v = conv(value)
    # What only workers act on: refused where no loader has one, skipped on a loader without.
    if arg in ("prefetch_factor", "in_order") and all(loader.num_workers == 0 for loader in run.loaders):
        raise KnobError("%s only matters with workers > 0 (set workers first)" % knob.id)
    for loader in list(run.loaders):
        if arg in ("prefetch_factor", "in_order") and loader.num_workers == 0:
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
    for it in list(run.iterators):
        info = _iters.get(it)
        if info is not None:
            info.recreate = True
    return True, "takes effect when the DataLoader's iterator is re-created, at the next batch (a new pass " \
                 "over the sampler starts there)"


def install(run, tracker=None, on_error=None):
    _r.attach(run, tracker, on_error)
    DataLoader.__init__ = _patched_init
    DataLoader.__iter__ = _patched_iter
    _BaseDataLoaderIter.__next__ = _patched_next


def disable():
    _r.disable()


def uninstall():
    _r.detach()
    DataLoader.__init__ = _orig_init
    DataLoader.__iter__ = _orig_iter
    _BaseDataLoaderIter.__next__ = _orig_next


def shutdown_all(run):
    for it in list(run.iterators):
        info = _iters.get(it)
        shutdown(it)
        if info is not None and info.replacement is not None:
            shutdown(info.replacement)
