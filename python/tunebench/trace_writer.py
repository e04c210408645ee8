"""The trace writer: one thread that turns stopped profiler sessions into chunk files, one at a time, in the
order they came, and announces each (`trace`) once its file is complete.

Writing a chunk (Kineto's export, then trace_chunk's rewrite) takes seconds for a GPU run; on the training
thread it was a 5.3 s pause inside the script's next DataLoader fetch, which the analyses then blamed on the
script. A thread alone does not help: Kineto's export holds the GIL for all of it (a Python loop on the
training thread ran at 1% of its speed while a 115 ms export ran beside it), so the pause would only move
into the next steps, unnamed. So the training thread forks at the chunk boundary and the child writes the
chunk (the session's events are its copy of them) and exits; the writer thread waits for it without the GIL
and announces the file. The fork's own time is part of the boundary's pause, drawn as such. If a child fails
(a library that cannot run after a fork), that chunk and every later one are written in the writer thread as
before, with a warning; TUNEBENCH_TRACE_FORK=0 asks for that from the start.

The queue is bounded: a chunk holds its session's events in memory until written, so at most `capacity`
chunks (the one being written and the ones waiting) are held. The tracer asks for room before handing one
over and waits for it, with a timeout; that wait is TuneBench's pause and is drawn as such (trace_chunk.Pause).
A chunk that fails to be written is lost with a warning, never the run. After flush() gave up (its timeout)
the writer announces nothing more: `done` is the parent's last message."""

import collections
import os
import signal
import threading
import time

from . import trace_chunk

# Read here only: makes every chunk's export this many seconds slower, so a test can show that the training
# thread does not wait for it.
DELAY_ENV = "TUNEBENCH_TEST_EXPORT_DELAY_S"
FORK_ENV = "TUNEBENCH_TRACE_FORK"
CHILD_TIMEOUT_S = 600  # a child writing one chunk for longer is stuck: killed, and the chunk written here


class Chunk:
    """A stopped session on its way to its file."""

    def __init__(self, prof, path, steps, base_us, mark_ns, memory=()):
        self.prof = prof
        self.path = path
        self.steps = steps          # span serial -> step number
        self.base_us = base_us
        self.mark_ns = mark_ns
        self.memory = memory        # (end ns, memory object) of its steps: drawn as counters
        self.first_step = min(steps.values())
        self.last_step = max(steps.values())
        self.pauses = []            # trace_chunk.Pause records drawn into it
        self.sealed = False         # its pauses were read: it takes no more
        self.child = None           # (pid, read end of its error pipe) of the process writing it


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
        self._fork = os.environ.get(FORK_ENV, "1") != "0" and hasattr(os, "fork")

    def wait_room(self, timeout):
        """Waits (at most `timeout` s) until a chunk can be handed over; False when none could."""
        with self._cond:
            return self._cond.wait_for(lambda: self._held < self.capacity, timeout)

    def submit(self, chunk):
        """Hands `chunk` over (after wait_room said yes: only the training thread submits, so the room stays).
        Called on the training thread, between two steps: the fork happens there, where no op of the
        script's is half done."""
        if self._fork:
            chunk.child = self._spawn(chunk)
        with self._cond:
            self._held += 1
            self._jobs.append(chunk)
            self._cond.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True, name="tunebench-trace-writer")
                self._thread.start()

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
        if self._delay:
            time.sleep(self._delay)
        chunk.prof.export_chrome_trace(chunk.path)
        trace_chunk.finish_chunk(chunk.path, chunk.steps, chunk.base_us, chunk.mark_ns, pauses,
                                 os.cpu_count() or 1, chunk.memory)

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
                self._fork = False
                self._send("warning", message="trace chunks are written in the training process from now on "
                                              "(they pause its Python while Kineto exports): the forked "
                                              "writer failed: %s" % why)
            if self._delay:
                time.sleep(self._delay)
            prof, chunk.prof = chunk.prof, None
            prof.export_chrome_trace(chunk.path)
            del prof  # the session's events are in the file now: their memory goes back before the rewrite
            pauses = self._seal(chunk)
            trace_chunk.finish_chunk(chunk.path, chunk.steps, chunk.base_us, chunk.mark_ns, pauses,
                                     os.cpu_count() or 1, chunk.memory)
        except Exception as e:  # a failed export loses a chunk, not the run
            self._remove(chunk)
            self._send("warning", message="trace chunk not written: %s" % e)
            return
        self._send("trace", path=os.path.abspath(chunk.path), first_step=chunk.first_step,
                   last_step=chunk.last_step)

    def _send(self, msg_type, **fields):
        with self._announce:
            if not self._closed:
                self.ch.send(msg_type, **fields)
