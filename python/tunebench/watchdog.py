"""A script that stops making steps: one warning, naming where it is (the innermost frame of the script's own
code on the main thread), after `seconds` without a step; again after the next step if it stalls again."""

import os
import sys
import sysconfig
import threading
import time
import traceback
import linecache

_OURS = os.path.dirname(os.path.abspath(__file__))
_LIBS = tuple(os.path.abspath(p) + os.sep for p in {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib",
                                                                                           "purelib", "platlib")} if p)


def _user_frame(frame):
    """(file, line, code) of the innermost frame outside the standard library, site-packages and us."""
    for fs in reversed(traceback.extract_stack(frame)):
        path = os.path.abspath(fs.filename)
        if path.startswith(_OURS) or path.startswith(_LIBS) or fs.filename.startswith("<"):
            continue
        return fs.filename, fs.lineno, (linecache.getline(fs.filename, fs.lineno) or "").strip()
    return None


class Watchdog:
    def __init__(self, tracker, send, seconds, clock=time.monotonic_ns, quiet=None):
        self.tracker = tracker
        self.quiet = quiet  # () -> True while no step is expected here (the training runs in child processes)
        self.send = send
        self.seconds = seconds
        self.clock = clock
        self.main = threading.main_thread().ident
        self.warned_at = None  # the progress mark we warned about
        self.stop = threading.Event()

    def start(self):
        if self.seconds <= 0:
            return
        threading.Thread(target=self._loop, daemon=True, name="tunebench-watchdog").start()

    def _loop(self):
        period = min(1.0, self.seconds / 4)
        while not self.stop.wait(period):
            self.check()

    def check(self):
        tr = self.tracker
        if tr.finished or (self.quiet is not None and self.quiet()):
            return
        mark = tr.last_progress_ns
        idle = (self.clock() - mark) / 1e9
        if idle < self.seconds or self.warned_at == mark:
            return
        self.warned_at = mark
        frame = sys._current_frames().get(self.main)
        where = _user_frame(frame) if frame is not None else None
        what = "no training step for %d s" % idle if tr.steps else "no training step yet after %d s" % idle
        if where:
            msg = "%s: the script is at %s:%d: %s" % (what, where[0], where[1], where[2])
        else:
            msg = "%s: the script is not in its own code now" % what
        fields = {"file": where[0], "line": where[1], "code": where[2]} if where else {}
        self.send(msg, seconds=round(idle, 1), **fields)
