"""Child processes the script starts itself (multiprocessing, torch.multiprocessing). A Hogwild trainer shares
its model (`model.share_memory()`) with Process children that train it while this process only waits for
them: no training step is ever made here, and the children are not followed (each would need the launcher
inside it and a channel of its own). What can be said is that, in one line, instead of a false "is this a
training script?", and how long the children ran.

`BaseProcess.start` and `join` are wrapped at class level (every context's Process derives from it; the
script's Process objects keep their type). A child counts when the script's main thread starts it and it is
no DataLoader worker; it trains when its arguments carry a module with trainable parameters (Hogwild's
`Process(target=train, args=(rank, args, model))`, `torch.multiprocessing.spawn(fn, args=(model,))`), found
without calling anything of the script's.
"""

import functools
import multiprocessing.process
import threading
import time

import torch

try:
    from torch.utils.data._utils.worker import _worker_loop
except ImportError:  # a torch without it: a DataLoader worker is then told by its target's name
    _worker_loop = None

_BaseProcess = multiprocessing.process.BaseProcess
_orig_start = _BaseProcess.start
_orig_join = _BaseProcess.join

_on_start = None         # (trains: bool) -> None, from the script's main thread
_thread = None
_active = False
children = 0             # child processes the script started (DataLoader workers not counted)
training = 0             # ... of which were handed a model to train
first_ns = None          # when the first training child started
last_end_ns = None       # when a join last saw a training child ended
_training_procs = []     # (pid) of the training children, for the join hook


def _carries_model(obj, depth=0):
    """Is there a module with a trainable parameter in `obj` (tuples, lists and dicts searched 3 deep)?"""
    if isinstance(obj, torch.nn.Module):
        return any(p.requires_grad for p in obj.parameters())
    if depth >= 3:
        return False
    if isinstance(obj, (tuple, list)):
        return any(_carries_model(o, depth + 1) for o in obj[:16])
    if isinstance(obj, dict):
        return any(_carries_model(o, depth + 1) for o in list(obj.values())[:16])
    return False


def _is_loader_worker(proc):
    target = getattr(proc, "_target", None)
    if _worker_loop is not None:
        return target is _worker_loop
    return getattr(target, "__name__", "") == "_worker_loop"


@functools.wraps(_orig_start)
def _start(self, *args, **kwargs):
    global children, training, first_ns
    trains = None  # None: not the script's own child
    if _active and threading.get_ident() == _thread:
        try:  # before the start, which deletes the target and its arguments from the object
            if not _is_loader_worker(self):
                trains = _carries_model(getattr(self, "_args", ())) or \
                    _carries_model(getattr(self, "_kwargs", {}))
        except Exception:  # noqa: BLE001 - ours: the script's child runs whatever we failed to note
            trains = None
    out = _orig_start(self, *args, **kwargs)
    if trains is not None:
        children += 1
        if trains:
            training += 1
            _training_procs.append(self.pid)
            if first_ns is None:
                first_ns = time.monotonic_ns()
        if _on_start is not None:
            try:
                _on_start(trains)
            except Exception:  # noqa: BLE001 - ours: never the script's problem
                pass
    return out


@functools.wraps(_orig_join)
def _join(self, *args, **kwargs):
    global last_end_ns
    out = _orig_join(self, *args, **kwargs)
    if _active and getattr(self, "_popen", None) is not None and self.pid in _training_procs \
            and self.exitcode is not None:
        last_end_ns = time.monotonic_ns()
    return out


def wall_ns(now_ns):
    """From the first training child's start to the last one seen ended (or now); 0 without one."""
    if first_ns is None:
        return 0
    return max(0, (last_end_ns or now_ns) - first_ns)


def install(on_start):
    global _on_start, _thread, _active
    _on_start, _thread, _active = on_start, threading.get_ident(), True
    _BaseProcess.start = _start
    _BaseProcess.join = _join


def disable():
    """In a forked child (and after an internal error): nothing is counted any more."""
    global _active
    _active = False


def uninstall():
    global _on_start, _active, children, training, first_ns, last_end_ns
    _BaseProcess.start = _orig_start
    _BaseProcess.join = _orig_join
    _on_start, _active = None, False
    children = training = 0
    first_ns = last_end_ns = None
    _training_procs.clear()
