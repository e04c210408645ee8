"""The run protocol's two channels: JSON lines to the parent on one fd, from the parent on another.

Writes are atomic per line (one lock, one os.write loop) because the step hook, the reader thread and the
launcher all send. The reader is a daemon thread: the script's own loop never blocks on the parent.
"""

import json
import os
import queue
import threading

# The protocol's version (docs/protocol.md), as client/protocol.h kVersion on the C++ side.
VERSION = 1

# Every message type, declared once: client/protocol.h's msg:: names (kToParent, kFromParent) and the tables of
# docs/protocol.md say the same (tests/test_protocol.py holds the three together). A Channel sends no other.
TO_PARENT = ("hello", "started", "step", "config_applied", "trace", "trace_lanes", "loader_parts", "finding",
             "warning", "tune_progress", "tune_done", "error", "done", "source", "loader", "outside", "training",
             "compile")
FROM_PARENT = ("start", "set", "trace", "tune", "stop")
_TO_PARENT = frozenset(TO_PARENT)

_STEP = ('{"v": ' + str(VERSION) + ', "type": "step", "i": %d, "samples": %d, "wall_ns": %d, "data_wait_ns": %d, '
         '"h2d_ns": 0, "minor_faults": %d, "loss": null, "config_rev": %d, "warmup": false, "skipped": %s, '
         '"t_ns": %d, "forward_ns": %d, "backward_ns": %d, "optim_ns": %d, "optimizer_steps": %d, "update": "%s", '
         '"unit": "%s", "tokens": %s, "profiler_ns": %d, "compile_ns": %d, "loader_pass": %d, "loader_len": %d, '
         '"traced": %s, "evaluations": %d, '
         '"memory": %s}\n')


def step_line(*, i: int, samples: int, wall_ns: int, data_wait_ns: int, minor_faults: int, config_rev: int,
              skipped: bool, t_ns: int, forward_ns: int, backward_ns: int, optim_ns: int, optimizer_steps: int,
              update: str, unit: str, tokens, profiler_ns: int, compile_ns: int, loader_pass: int, loader_len: int,
              traced: bool, evaluations: int, memory_json: str) -> str:
    """The `step` message (docs/protocol.md), one JSON line. Formatted by hand: json.dumps of this dict is most
    of a step's own cost on a slow CPU. Every field is an int, a bool, null, one of our own words (nothing to
    escape: `update` is optimizer, hand-written or none; `unit` samples or sequences) or `memory_json`, an object of ints already
    encoded; the keys and their order are what json.dumps wrote."""
    return _STEP % (i, samples, wall_ns, data_wait_ns, minor_faults, config_rev, "true" if skipped else "false",
                    t_ns, forward_ns, backward_ns, optim_ns, optimizer_steps, update, unit,
                    "null" if tokens is None else int(tokens), profiler_ns, compile_ns, loader_pass, loader_len,
                    "true" if traced else "false", evaluations,
                    memory_json)


class Channel:
    def __init__(self, out_fd):
        self._fd = out_fd
        self._lock = threading.Lock()
        self.closed = False

    def send(self, msg_type, **fields):
        if msg_type not in _TO_PARENT:
            raise ValueError("%r is no message type of the protocol (protocol.py TO_PARENT)" % (msg_type,))
        msg = {"v": VERSION, "type": msg_type}
        msg.update(fields)
        self.send_line(json.dumps(msg, default=str) + "\n")

    def send_line(self, line):
        """One message already encoded as a JSON line (ending in a newline)."""
        data = line.encode()
        if self.closed:  # checked before the lock too: a forked child may have inherited it held
            return
        with self._lock:
            if self.closed:
                return
            try:
                view = memoryview(data)
                while view:
                    n = os.write(self._fd, view)
                    view = view[n:]
            except OSError:
                self.closed = True  # the parent is gone; the script may still finish


class Inbox:
    """Parent messages, parsed by a daemon thread; EOF counts as `stop`."""

    def __init__(self, in_fd, on_bad_line=None):
        self.q = queue.Queue()
        self.eof = False
        if in_fd is None:
            return
        self._thread = threading.Thread(target=self._read, args=(in_fd, on_bad_line), daemon=True,
                                        name="tunebench-inbox")
        self._thread.start()

    def _read(self, fd, on_bad_line):
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace", closefd=False) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    if on_bad_line:
                        on_bad_line(line)
                    continue
                if isinstance(msg, dict) and isinstance(msg.get("type"), str):
                    self.q.put(msg)
        self.eof = True
        self.q.put({"type": "stop", "reason": "eof"})

    def drain(self):
        out = []
        while True:
            try:
                out.append(self.q.get_nowait())
            except queue.Empty:
                return out
