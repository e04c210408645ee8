"""What taking a batch from a DataLoader worker costs the training process, measured on the run's own batch.

A script loading in its own process (num_workers=0) never pays it, so the model's rate its run measured is too
high for the same script with workers: each batch a worker makes is collated into shared memory and pickled onto
a queue, and the training process receives it (the pickle, each tensor's file descriptor, its pages mapped and
touched when the model reads them, unmapped when freed). Predictions of a worker count from num_workers=0 runs
came 4-18% above what the workers then fed (docs/analysis.md) while runs with workers were not.

So while the loader is timed, the last batch of the script's first DataLoader with num_workers=0 is kept (a
reference: at most one batch held a step longer), and at the run's end the same batch goes through a real
DataLoader worker, forked, `N` times; the training process's time to take each one and touch its pages is the
figure (the median: a batch that came late is the worker's, not the receiving's). Bounded: a probe that cannot
start or finish in `TIMEOUT_S`, a batch holding a device tensor or one that cannot be pickled gives no figure.
"""

import pickle
import statistics
import time
import weakref
from collections.abc import Mapping

N = 16
TIMEOUT_S = 5.0
MAX_BYTES = 1 << 30  # a batch over 1 GiB is not copied for the probe (its copy would double it in memory)

_loader = None  # weak reference to the loader whose batches are kept (the script's first with num_workers=0)
_batch = None


def keep(loader, batch):
    """A batch of `loader` (hooks/dataloader.py, after each batch while the loader is timed)."""
    global _loader, _batch
    if getattr(loader, "num_workers", 1) != 0:
        return
    if _loader is None:
        _loader = weakref.ref(loader)
    if _loader() is loader:
        _batch = batch


def forget():
    global _loader, _batch
    _loader = _batch = None


class _Repeat:
    """The batch, again and again: a map-style dataset whose every item is a whole batch (batch_size=None)."""

    def __init__(self, batch, n):
        self.batch, self.n = batch, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.batch


def _map(obj, fn):
    """The batch with fn(tensor) in place of each tensor (in tuples, named tuples, lists and mappings: a dict, or a
    tokenizer's UserDict-like batch, which comes back as a dict: its tensors are what a worker would send)."""
    import torch
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_map(x, fn) for x in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(x, fn) for x in obj)
    if isinstance(obj, Mapping):
        return {k: _map(v, fn) for k, v in obj.items()}
    return obj


def _tensors(obj):
    out = []
    _map(obj, out.append)
    return out


def _shared(obj):
    """The batch with each tensor copied into shared memory, as a worker's collate puts it."""
    return _map(obj, lambda t: t.detach().clone().share_memory_())


def _skeleton(obj):
    """The batch with its tensors left out: what must pickle besides them (a worker's pickle would fail in its
    queue's thread, and the probe wait for its timeout)."""
    return _map(obj, lambda t: None)


def _touch(obj):
    """Reads one element a page of each tensor: what the model's first read of a received batch costs."""
    for t in _tensors(obj):
        if t.numel():
            t.reshape(-1)[:: max(1, 4096 // t.element_size())].sum()


def measure(batch=None, make=None):
    """{"ns": median ns to take a batch from a worker and touch it, "batches": probed, "bytes": the batch's},
    or None (nothing kept, a device tensor, a batch that cannot be pickled, no fork, past the timeout). `make`
    makes the probe's DataLoader (the launcher's: past its hooks, hooks/dataloader.py `unhooked`)."""
    import multiprocessing
    from torch.utils.data import DataLoader
    make = make or DataLoader
    batch = _batch if batch is None else batch
    if batch is None or "fork" not in multiprocessing.get_all_start_methods():
        return None
    tensors = _tensors(batch)
    if not tensors or any(t.device.type != "cpu" for t in tensors):
        return None
    size = sum(t.numel() * t.element_size() for t in tensors)
    if size > MAX_BYTES:
        return None
    it = None
    try:
        pickle.dumps(_skeleton(batch))
        shared = _shared(batch)
        # The probe is no loader of the script's, and its worker is not timed (loader_parts is finished by now).
        dl = make(_Repeat(shared, N + 1), batch_size=None, num_workers=1, prefetch_factor=N + 1,
                  multiprocessing_context="fork", timeout=TIMEOUT_S)
        deadline = time.monotonic() + TIMEOUT_S
        it = dl._get_iterator()
        first = next(it)
        del first
        # The worker makes the rest while the first is taken; the timing starts when all are queued.
        queue = getattr(it, "_data_queue", None)
        while time.monotonic() < deadline:
            try:
                if queue is None or queue.qsize() >= N:
                    break
            except NotImplementedError:
                break
            time.sleep(0.005)
        if queue is None:
            time.sleep(0.2)
        took = []
        for _ in range(N):
            t0 = time.perf_counter_ns()
            b = next(it)
            _touch(b)
            del b
            took.append(time.perf_counter_ns() - t0)
            if time.monotonic() > deadline:
                return None
        return {"ns": int(statistics.median(took)), "batches": len(took), "bytes": int(size)}
    except Exception:  # noqa: BLE001 - ours: the verdict says the figure was not measured
        return None
    finally:
        if it is not None:
            try:
                it._shutdown_workers()
            except Exception:  # noqa: BLE001 - a worker already gone
                pass
