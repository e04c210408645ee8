"""torch.save, timed: a checkpoint is time outside the training iterations (iterations.py). torch has no hook
for it, so the function is wrapped (functools.wraps: same name, signature and docs) under both of its
names, torch.save and torch.serialization.save, so that `torch.save is torch.serialization.save` still holds."""

import functools
import time

import torch
import torch.serialization

_orig_save = torch.save
_tracker = None
_on_error = None


def _fail(e):
    global _tracker
    _tracker = None
    if _on_error is not None:
        _on_error(e)


@functools.wraps(_orig_save)
def _save(*args, **kwargs):
    tracker = _tracker
    if tracker is None:
        return _orig_save(*args, **kwargs)
    try:
        tracker.save_start(time.monotonic_ns())
    except Exception as e:  # noqa: BLE001
        _fail(e)
    try:
        return _orig_save(*args, **kwargs)
    finally:
        tracker = _tracker
        if tracker is not None:
            try:
                tracker.save_end(time.monotonic_ns())
            except Exception as e:  # noqa: BLE001
                _fail(e)


def install(tracker, on_error=None):
    global _tracker, _on_error
    _tracker, _on_error = tracker, on_error
    torch.save = _save
    torch.serialization.save = _save


def disable():
    global _tracker
    _tracker = None


def uninstall():
    disable()
    torch.save = _orig_save
    torch.serialization.save = _orig_save
