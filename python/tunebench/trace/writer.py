"""The trace writer: turns stopped profiler sessions into chunk files, in the order they came, and announces
each (`trace`) once its file is complete.

Writing a chunk is Kineto's save (its JSON file), then trace_chunk's rewrite. The rewrite runs in this
module's thread and holds the GIL only in short blocks. Kineto's save holds it for all of it, so in a thread
beside the training thread it only moved its time into the script's next steps, unnamed (a 5.3 s save of a
GPU run's chunk was blamed on the script's DataLoader; a step after a boundary took 249 ms against 12).
The save therefore runs where its time is named, in one of two ways:

- in place: on the training thread, inside the boundary's pause, drawn as TuneBench's (`save_us`);
- in a forked child: the training thread forks at the boundary, and the child saves its copy of the session
  and rewrites it; this thread waits for it without the GIL. The fork's own time is in the pause
  (`fork_us`), but not what it leaves behind: after a fork every page the parent writes faults once (and is
  copied while the child lives). That fell in the script's next step: 8-10 thousand faults, +10-40 ms for a
  small CNN with a 0.8 GB process here, +60-92 ms inside a run with a loader worker, besides 15-25 ms for
  the fork itself.

So a chunk is saved in place while that is short (a small CNN's 20-step chunk: 10 ms) and forked when its
session's stop took FORK_ABOVE_S or more (a save takes 0.4-0.65 of the stop here: 20 steps of 1 400 small ops
stop in 700-970 ms and save in 270-380), or once a save in place took that long (a slow disk).
TUNEBENCH_TRACE_FORK=0 saves in place always, =1 forks always. If a child fails (a library that cannot run
after a fork), its chunk is saved in this thread and every later one in place, with a warning.

The queue is bounded: a chunk holds its session's events in memory until saved, and its place until
rewritten, so at most `capacity` chunks are held. The tracer asks for room before handing one over and waits
for it, with a timeout; that wait is TuneBench's pause and is drawn as such (trace_chunk.Pause). A chunk that
fails to be written is lost with a warning, never the run. After flush() gave up (its timeout) the writer
announces nothing more: `done` is the parent's last message."""

import collections
import os
import signal
import threading
import time

from . import chunk as trace_chunk
from ..hooks import loader_lanes, loader_parts

# Read here only: makes every chunk's save this many seconds slower, so a test can show where that time goes.
DELAY_ENV = "TUNEBENCH_TEST_EXPORT_DELAY_S"
FORK_ENV = "TUNEBENCH_TRACE_FORK"
FORK_ABOVE_S = 0.1  # a stop or a save this long: the save in place would cost about what a fork and its faults do
CHILD_TIMEOUT_S = 600  # a child writing one chunk for longer is stuck: killed, and the chunk written here
# How long after a chunk's end its loader lanes are taken: a loading process writes its events every
# loader_lanes.WRITE_EVERY_NS (50 ms) while it has some.
LANES_AFTER_NS = 2 * loader_lanes.WRITE_EVERY_NS


class Chunk:
    """A stopped session on its way to its file."""

    def __init__(self, prof, path, steps, base_us, clock, memory=()):
        self.prof = prof
        self.path = path
        self.steps = steps          # span serial -> step number
        self.stop_ns = 0            # how long its session took to stop: its save takes a part of that
        self.base_us = base_us
        self.clock = clock          # trace_chunk.ClockMark of its session (None: none entered)
        self.memory = memory        # (end ns, memory object) of its steps: drawn as counters
        self.first_step = min(steps.values())
        self.last_step = max(steps.values())
        self.pauses = []            # trace_chunk.Pause records drawn into it
        self.sealed = False         # its pauses were read: it takes no more
        self.child = None           # (pid, read end of its error pipe) of the process writing it
        self.saved = False          # Kineto's file was saved in place: only the rewrite is left
        self.error = None           # why the save in place failed
        self.end_ns = 0             # monotonic ns when its session began to stop (its loader lanes end there)


class ChunkWriter:
    def __init__(self, channel, capacity=2):
        self.ch = channel
        self.capacity = max(1, int(capacity))
        self._cond = threading.Condition()
        self._jobs = collections.deque()
        self._held = 0                   # chunks handed over and not yet finished (waiting or being written)
        self._announce = threading.Lock()
        self._closed = False             # flush() gave up: nothing is announced any more
        self._thread = None
        self._delay = float(os.environ.get(DELAY_ENV) or 0)
        asked = os.environ.get(FORK_ENV, "auto")
        # "here" (save in place), "fork", or "auto": in place unless the chunk is big (its stop took
        # FORK_ABOVE_S), and forked always once a save in place took that long.
        self.mode = "here" if asked == "0" or not hasattr(os, "fork") else "fork" if asked == "1" else "auto"

    def wait_room(self, timeout):
        """Waits (at most `timeout` s) until a chunk can be handed over; False when none could."""
        with self._cond:
            return self._cond.wait_for(lambda: self._held < self.capacity, timeout)

    def save_here(self, chunk):
        """Saves Kineto's file of `chunk` on this (the training) thread unless chunks are forked; ns taken.
        Called between two steps, inside the boundary's pause. A failed save is reported by the writer."""
        if self.mode == "fork" or (self.mode == "auto" and chunk.stop_ns >= FORK_ABOVE_S * 1e9):
            return 0
        t = time.monotonic_ns()
        try:
            self._save(chunk)
        except Exception as e:
            chunk.error = str(e) or type(e).__name__
        chunk.prof = None  # the session's events are in the file now (or lost): their memory goes back
        took = time.monotonic_ns() - t
        if self.mode == "auto" and took >= FORK_ABOVE_S * 1e9:
            self.mode = "fork"
        return took

    def submit(self, chunk):
        """Hands `chunk` over (after wait_room said yes: only the training thread submits, so the room stays)
        and forks its writer if it was not saved in place; ns taken by the fork. Called on the training
        thread, between two steps: the fork happens there, where no op of the script's is half done."""
        took = 0
        if chunk.prof is not None and self.mode != "here":
            t = time.monotonic_ns()
            chunk.child = self._spawn(chunk)
            took = time.monotonic_ns() - t
        with self._cond:
            self._held += 1
            self._jobs.append(chunk)
            self._cond.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True, name="tunebench-trace-writer")
                self._thread.start()
        return took

    def add_pauses(self, chunk, pauses):
        """Draws `pauses` into `chunk` too, if its pauses were not read yet; False otherwise."""
        with self._cond:
            if chunk.sealed:
                return False
            chunk.pauses.extend(pauses)
            return True

    def flush(self, timeout):
        """Waits until every chunk handed over is written and announced; after `timeout` s gives up, and the
        rest are never announced. Returns the number of chunks given up."""
        with self._cond:
            self._cond.wait_for(lambda: self._held == 0, timeout)
            left = self._held
        if left:
            with self._announce:
                self._closed = True
        return left

    # --- the writer's thread -----------------------------------------------------------------------------
    def _loop(self):
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._jobs)
                chunk = self._jobs.popleft()
            try:
                self._write(chunk)
                self._lanes(chunk)
            finally:
                with self._cond:
                    self._held -= 1
                    self._cond.notify_all()

    def _seal(self, chunk):
        with self._cond:
            chunk.sealed = True
            return list(chunk.pauses)

    def _spawn(self, chunk):
        """Forks the process that writes `chunk`; None when fork itself failed (written here then)."""
        pauses = self._seal(chunk)
        try:
            r, w = os.pipe()
        except OSError:
            return None
        try:
            pid = os.fork()
        except OSError:
            os.close(r)
            os.close(w)
            return None
        if pid == 0:  # the child: this thread only; it writes, then leaves without any of the parent's exits
            code = 0
            try:
                os.close(r)
                for sig in (signal.SIGTERM, signal.SIGINT):
                    signal.signal(sig, signal.SIG_DFL)  # a stop of the group ends it, no handler of the script's
                self._export(chunk, pauses)
            except BaseException as e:
                try:
                    os.write(w, str(e).encode("utf-8", "replace")[:2000])
                except Exception:
                    pass
                code = 1
            os._exit(code)
        os.close(w)
        return pid, r

    def _export(self, chunk, pauses):
        self._save(chunk)
        trace_chunk.finish_chunk(chunk.path, chunk.steps, chunk.base_us, chunk.clock, pauses,
                                 os.cpu_count() or 1, chunk.memory)

    def _save(self, chunk):
        """Kineto's file of `chunk` (wherever that runs: in place, in a child, in this thread)."""
        if self._delay:
            time.sleep(self._delay)
        chunk.prof.export_chrome_trace(chunk.path)
        chunk.saved = True

    def _wait_child(self, pid, r):
        """(ok, why) of the child writing a chunk; waits without the GIL, at most CHILD_TIMEOUT_S."""
        deadline = time.monotonic() + CHILD_TIMEOUT_S
        try:
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done == pid:
                    why = os.read(r, 2000).decode("utf-8", "replace").strip()
                    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
                        return True, ""
                    if os.WIFSIGNALED(status):
                        return False, why or "the writer process died of signal %d" % os.WTERMSIG(status)
                    return False, why or "the writer process exited with %d" % os.WEXITSTATUS(status)
                if time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    return False, "the writer process took more than %d s" % CHILD_TIMEOUT_S
                time.sleep(0.02)
        except OSError as e:
            return False, "the writer process was lost: %s" % e
        finally:
            os.close(r)

    def _remove(self, chunk):
        for p in (chunk.path, chunk.path + ".tmp", chunk.path + trace_chunk.TMP_SUFFIX):
            try:
                os.remove(p)
            except OSError:
                pass

    def _write(self, chunk):
        try:
            if chunk.child is not None:
                ok, why = self._wait_child(*chunk.child)
                chunk.child = None
                if ok:
                    chunk.prof = None
                    self._send("trace", path=os.path.abspath(chunk.path), first_step=chunk.first_step,
                               last_step=chunk.last_step)
                    return
                self._remove(chunk)
                self.mode = "here"
                self._send("warning", message="trace chunks are saved on the training thread from now on, "
                                              "inside each boundary's pause: the forked writer failed: %s" % why)
            if chunk.error is not None:
                raise RuntimeError(chunk.error)
            if not chunk.saved:  # its fork failed: saved here, beside the training thread, this once
                self._save(chunk)
                chunk.prof = None
            pauses = self._seal(chunk)
            trace_chunk.finish_chunk(chunk.path, chunk.steps, chunk.base_us, chunk.clock, pauses,
                                     os.cpu_count() or 1, chunk.memory)
        except Exception as e:  # a failed save or rewrite loses a chunk, not the run
            self._remove(chunk)
            self._send("warning", message="trace chunk not written: %s" % e)
            return
        self._send("trace", path=os.path.abspath(chunk.path), first_step=chunk.first_step,
                   last_step=chunk.last_step)

    def _lanes(self, chunk):
        """The loader's lanes recorded up to `chunk`'s end (hooks/loader_lanes.py), as a file beside it,
        announced as `trace_lanes`; nothing when the loader was not timed or drew nothing. Waits for the
        loading processes' last writes only while no next chunk waits (what comes late goes with that one, on
        its own clock): the writer holds this chunk's room meanwhile, and a fast script's next boundary would
        wait for it."""
        if not loader_lanes.active():
            return
        try:
            wait_s = (chunk.end_ns + LANES_AFTER_NS - time.monotonic_ns()) / 1e9
            if wait_s > 0:
                with self._cond:
                    self._cond.wait_for(lambda: self._jobs, wait_s)
            groups, depth = loader_lanes.take()
            path = os.path.join(os.path.dirname(chunk.path), "lanes" + os.path.basename(chunk.path)[len("chunk"):])
            if loader_lanes.write_file(path, groups, depth, os.getpid()):
                self._send("trace_lanes", path=os.path.abspath(path), first_step=chunk.first_step,
                           last_step=chunk.last_step)
            # The loader's totals so far: a watching parent's live verdict (the run's own is done's).
            parts, cpu_ns = loader_parts.snapshot()
            if parts:
                self._send("loader_parts", parts=parts, **({"cpu_ns": cpu_ns} if cpu_ns is not None else {}))
        except Exception as e:  # noqa: BLE001 - ours: the lanes are lost, never the chunk or the run
            self._send("warning", message="the loader's timeline lanes were not written: %s" % e)

    def _send(self, msg_type, **fields):
        with self._announce:
            if not self._closed:
                self.ch.send(msg_type, **fields)
