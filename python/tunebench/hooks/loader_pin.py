"""The pin-memory step of a DataLoader with pin_memory=True: each batch's copy into page-locked memory, timed
where it runs - the loader's pin-memory thread in the training process (with workers), or the training thread
itself (num_workers=0) - while the loader is timed (hooks/loader_parts.py enables it with the rest).

torch's pin-memory loop and its single-process iterator both look `pin_memory` up in
torch.utils.data._utils.pin_memory at each batch, so one wrapper there sees every batch (and the calls it makes
of itself for a batch's elements, which count as that batch's). Its totals (`ns`,
`calls`) go into the training process's loader report as `pin_memory`; while a chunk records, each batch is an
event on the pin-memory thread's lane (hooks/loader_lanes.py).
"""

import os
import threading
import time

from . import loader_lanes


class _Pins:
    """The training process's pins: totals, and the lane's events (the recorder's shape, for loader_lanes)."""

    def __init__(self):
        self.pid = os.getpid()
        self.who = "main"
        self.tid = loader_lanes.PIN_TID
        self.ns = self.calls = 0
        self.events = []
        self.dropped = 0
        self.written = 0
        self.lock = threading.Lock()  # the pin thread adds while the writer's take reads

    def add(self, t0, dt, lane):
        with self.lock:
            self.ns += dt
            self.calls += 1
            if lane:
                if len(self.events) < loader_lanes.MAX_EVENTS:
                    self.events.append(("pin memory", t0, dt))
                else:
                    self.dropped += 1
        if self.events and t0 + dt - self.written >= loader_lanes.WRITE_EVERY_NS:
            self.written = t0 + dt
            with self.lock:
                loader_lanes.append(self)


_pins = None
_orig = None


def install():
    """Wraps torch's pin_memory once (a no-op when torch has none where expected)."""
    global _pins, _orig
    if _orig is not None:
        return
    try:
        from torch.utils.data._utils import pin_memory as module
    except ImportError:
        return
    orig = getattr(module, "pin_memory", None)
    if orig is None:
        return
    _pins = _Pins()
    _orig = orig

    inside = threading.local()  # torch's pin_memory calls itself (through this name) for each element

    def timed_pin_memory(data, *args, **kwargs):
        pins = _pins
        if pins is None or getattr(inside, "on", False) or pins.pid != os.getpid():  # a forked worker's: not ours
            return orig(data, *args, **kwargs)
        lane = loader_lanes.on()
        inside.on = True
        t0 = time.monotonic_ns()
        try:
            return orig(data, *args, **kwargs)
        finally:
            dt = time.monotonic_ns() - t0
            inside.on = False
            pins.add(t0, dt, lane)
    timed_pin_memory.__wrapped__ = orig
    module.pin_memory = timed_pin_memory


def totals():
    """{"ns", "calls"} of the batches pinned so far, or None (no pin seen)."""
    if _pins is None or not _pins.calls:
        return None
    with _pins.lock:
        if _pins.events:
            loader_lanes.append(_pins)
        return {"ns": _pins.ns, "calls": _pins.calls}
