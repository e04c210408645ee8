"""Traces of a script: torch.profiler sessions of `every` steps each, written as Kineto JSON chunks (torch
2.x; a torch without Kineto writes the legacy event array, which the importer reads too), with the input
shapes and Python stacks of the ops when asked (`detail`: "shapes", "stack"). Each step is a
`ProfilerStep#N` range so the analyses find steps as in any PyTorch profiler trace, and each model forward a
`## forward ##` range (hooks_forward), which the analyses count as the step's forward.

A span (iterations.py) is recorded under a provisional name, `tunebench.span#SERIAL`, because whether it is
a training iteration, and its step number, are known only later (at its backward, at its end). When the chunk
is written, the ranges of the spans that became steps are renamed `ProfilerStep#N` and the others (batches
of a validation pass) `## outside training ##`, so that a step range never holds time outside the training
iterations.

The training thread stops and starts sessions (that must happen on it) and saves a chunk's file or forks
its writer (writer.py says which and why); the trace writer's thread rewrites and announces the
chunks. What TuneBench costs the training thread at a chunk boundary - the device sync, the session's stop,
the save or the fork, the next session's start, a wait for the writer - is measured and drawn into the
trace as its own `cat: "tunebench"` events (chunk.py), and is reported in the next step's
`profiler_ns`: it falls between two steps, never inside one (the launcher reads a step's start after this
returns).

A sampled trace (`share` > 0, the default 3%) records a chunk, then lets the script run untraced for as many
steps as keep what watching costs under `share` of the run: a chunk's cost is its boundary pauses (the stop,
the save or fork, the next start, as measured) and what its steps took beyond an untraced step (recording
work); the untraced time that follows is cost / share less the chunk's own time, in untraced steps at their
measured median. The untraced interval is drawn into the next chunk as `TuneBench: untraced steps`, which
the analyses leave out of their window. share 0 traces every step, one chunk after another.

A sampled chunk is as long as keeps its stop within one untraced step, between MIN_CHUNK and `every` steps:
Kineto's stop runs on the training thread and grows with the chunk's events (here ~0.75 ms a step of 8 small
Linear layers whose step takes 0.25 ms: a 20-step chunk stopped in 16 ms, 64 steps, a 3-step one in 2 ms), so
a fast script gets several short chunks where it got one long pause, and the share buys the same traced time
either way. The first chunk, measured before anything else, is MIN_CHUNK steps: it is also the one a short run
pays without the untraced steps that pay for it.

A detail quota (`quota` K > 0, the launcher's --trace-steps) is what a sampled trace must hold at least: the share
alone gave a 60-step run one 3-step chunk. While traced steps are owed, the untraced gap after a chunk is the
share's or, when smaller, the quota's: with the run's length known (--steps N), the owed steps spread over the
steps it has left, in chunks of the next chunk's length placed evenly (the gap leaves room for all of them, so the
last one ends with the run), and where the owed steps fill what is left, chunks follow one another without a gap;
with the length unknown (a script run to its end, a live run), the gap is at most the chunk's own length (the
owed steps come at least every other step). Once the quota is held, the share alone rules. A chunk's length is
never the quota's to set: the owed steps change where chunks fall, not what a chunk holds."""

import math
import os
import statistics
import sys
import time

import torch

from ..hooks import forward as hooks_forward, loader_lanes
from .chunk import SPAN, UNTRACED, ClockMark, Pause, clock_mark_name
from .writer import Chunk, ChunkWriter

# How long a chunk boundary waits for the writer to have room before that chunk is dropped (with a warning),
# and how long the end of the run waits for the last chunks before `done`. Neither may hang the run.
ROOM_TIMEOUT_S = 30.0
FLUSH_TIMEOUT_S = 60.0
# The clock marker's bracket wider than this is taken again (clock_mark): twice the widest seen undisturbed.
CLOCK_BRACKET_NS = 500_000
CLOCK_TRIES = 5
# The fewest steps a sampled chunk holds: torch.profiler's documented schedule records `active=3` steps, the
# fewest that show a step beside the steps around it (the gap between steps, a stall every other step).
MIN_CHUNK = 3


def quota_gap(owed, left, length, held):
    """The most untraced steps a detail quota allows after a chunk (None: nothing is owed, the share alone rules).
    owed: traced steps the quota still asks for; left: the steps the run makes after the chunk (None: not known);
    length: the next chunk's; held: the steps the chunk held. A known length: 0 when the owed steps fill what is
    left (or more: the run holds what it can), else the room beyond the owed steps shared evenly among the chunks
    they take, at least 1 (the room holds it), so that the last of them ends with the run whatever the lengths of
    the chunks before it: each chunk plans again with what is left. Unknown: the chunk's own length (at least every
    other step traced until the quota is held: a run that stops at any time has half its steps so far)."""
    if owed <= 0:
        return None
    if left is None:
        return max(1, held)
    if left <= owed:
        return 0
    chunks = -(-owed // max(1, length))
    return max(1, (left - owed) // chunks)


class Session(torch.profiler.profile):
    """torch.profiler.profile without the compiler's import at its start. Its prepare_trace asks
    hasattr(torch, "_inductor") to read one compiler setting (compiled CUDA graphs, which change how CUPTI may
    be torn down), and that question imports torch._inductor when nothing has: 0.66-0.73 s of the first
    chunk's start here, paid by every traced script that never compiles. A compiler nobody imported has
    compiled nothing with CUDA graphs, so the session starts as if the attribute were absent; once a script
    imported it (torch.compile), torch's own start runs unchanged."""

    def prepare_trace(self):
        lazy = getattr(torch, "_lazy_modules", None)
        if "torch._inductor" in sys.modules or not isinstance(lazy, set) or "_inductor" not in lazy:
            return super().prepare_trace()
        lazy.discard("_inductor")
        try:
            return super().prepare_trace()
        finally:
            lazy.add("_inductor")


def clock_mark():
    """Records the clock marker (chunk.py) in the running session; returns its ClockMark: time.monotonic_ns()
    just before it, and the marker's name. The range's start is stamped early in the enter call, at a steady
    distance from this reading, while the rest of the call (the Python handle) varies: on this 2-core machine
    under load the call took 110-270 µs and ranges entered the same way mapped to within 70 µs of their own
    start. A thread descheduled between the reading and the stamp maps the whole chunk late by as long (3.8 ms
    on a busy CI run), so a marker whose bracket (the reading to the call's return) is wider than
    CLOCK_BRACKET_NS is entered again under the next name, at most CLOCK_TRIES times, and the narrowest is kept."""
    torch.ops.profiler._record_function_enter_new  # resolved lazily on first use: 200 µs, not inside the bracket
    best = None
    for attempt in range(CLOCK_TRIES):
        name = clock_mark_name(attempt)
        rf = torch.autograd.profiler.record_function(name)
        t = time.monotonic_ns()
        with rf:
            pass
        mark = ClockMark(t, name, time.monotonic_ns() - t)
        if best is None or mark.bracket_ns < best.bracket_ns:
            best = mark
        if mark.bracket_ns <= CLOCK_BRACKET_NS:
            break
    return best


class Tracer:
    def __init__(self, run, directory, every, detail=(), share=0.0, quota=0):
        self.run = run
        self.share = max(0.0, float(share))
        self.quota = max(0, int(quota))  # traced steps the trace must hold at least (0: none asked)
        self.traced = 0        # traced steps so far, every chunk
        self.resume_at = None  # a sampled trace between chunks: the step at which the next chunk starts
        self.gap_t0 = 0        # ... and when its untraced time began (monotonic ns)
        self.chunk_walls = []  # the traced steps' wall times, this chunk
        self.free_walls = []   # the last untraced steps' wall times (the reference a chunk's cost is taken against)
        self.start_cost_ns = 0  # what the last sampled chunk's start took
        self.detail = set(detail)
        self.dir = directory
        self.every = max(1, int(every))
        # This chunk's length: sampled, the first is short (nothing is measured yet) and the next ones are
        # sized by the last one's stop (chunk_length); share 0, `every`.
        self.length = min(self.every, MIN_CHUNK) if self.share > 0 else self.every
        self.prof = None
        self.first = 0
        self.chunk = 0
        self.range = None      # (serial, record_function) of the span being recorded
        self.ended = None      # the serial of the last span whose range range_ended() closed
        self.steps = {}        # serial -> step number, for the spans of this chunk that became steps
        self.memory = []       # (end ns, memory object) of this chunk's steps
        self.writer = ChunkWriter(run.ch)
        self.pending = []      # pauses not drawn yet: they go into the next chunk handed to the writer
        self.last = None       # the last chunk handed over (a pause with no chunk after it joins it)
        self.pause_ns = 0      # pause time since take_pause_ns()
        self.total_pause_ns = 0
        os.makedirs(directory, exist_ok=True)

    # --- what the launcher calls -------------------------------------------------------------------------
    def start(self, at_step):
        if self.prof is not None:
            self.resume_at = None
            return
        t0 = time.monotonic_ns()
        if self.resume_at is not None:  # a `trace start` between two chunks: the gap so far was untraced
            self.pending.append(Pause(self.gap_t0, t0, UNTRACED, 0))
            self.resume_at = None
        self._start(at_step)
        # Not a sampled chunk's start cost: the first start pays Kineto's set-up once (1.5 s here).
        self._paused(Pause(t0, time.monotonic_ns(), "profiler start", 0))

    def stop(self):
        """Ends tracing (a `trace stop`, the run's end): this chunk is the last, so this pause is drawn in it."""
        self.resume_at = None
        if self.prof is None:
            # Between two chunks of a sampled trace: the last chunk's stop, not drawn yet, joins it.
            if self.pending and self.last is not None and self.writer.add_pauses(self.last, self.pending):
                self.pending = []
            return
        t0 = time.monotonic_ns()
        chunk = self._stop()
        waited, room = self._room(chunk)
        saved = self.writer.save_here(chunk) if room else 0
        pause = Pause(t0, time.monotonic_ns(), "profiler stop", waited, saved)
        self._paused(pause)
        if room:
            # Drawn in this chunk, the pause is read before a fork; the fork's own time after the run's last
            # step is only counted.
            forked = self._submit(chunk)
            self.pause_ns += forked
            self.total_pause_ns += forked
        elif self.last is not None and self.writer.add_pauses(self.last, self.pending):
            self.pending = []
        # else: the pauses stay pending for a next start; none comes after the run's last step, and the
        # steps' profiler_ns and `done` still count them.

    def flush(self):
        """Before `done`: waits (bounded) until the chunks handed over are written and announced."""
        left = self.writer.flush(FLUSH_TIMEOUT_S)
        if left:
            self.run.ch.send("warning", message="%d trace chunk(s) not written within %d s: left out"
                                                % (left, FLUSH_TIMEOUT_S))

    def recording(self):
        """Whether the step that just ended ran under the profiler (sessions start and stop only between steps,
        after the step's message): its time is stretched by the recording, and the parent's figures leave it out."""
        return self.prof is not None

    def take_pause_ns(self):
        """TuneBench's pause time on the training thread since the last call (for the next step's message)."""
        ns, self.pause_ns = self.pause_ns, 0
        return ns

    def span_opened(self, serial):
        if self.prof is None:
            return
        self._close_range()
        rf = torch.autograd.profiler.record_function(SPAN + str(serial))
        rf.__enter__()
        self.range = (serial, rf)

    def range_ended(self, serial):
        """The span's step ended: its range ends here, before TuneBench's own work at the step's end (the first
        step's `hello`, a step's memory read and message), which is no step's time: the first step's range held
        3-6 ms of it past the step's end, and its ProfilerStep#0 lay outside the step lane's box."""
        if self.range is not None and self.range[0] == serial:
            self._close_range()
            self.ended = serial

    def span_closed(self, serial, step=None, last=False, memory=None, wall_ns=0):
        """The span ended: a step (its number), or not one (None). last: the run ends after it (no new
        session then: the run's end stops this one). memory: (the step's end, monotonic ns; its `memory`
        object), drawn into the chunk as counters. wall_ns: the step's wall time (a sampled trace's costs)."""
        if self.prof is None:
            if self.resume_at is not None and step is not None:
                self.free_walls = (self.free_walls + [wall_ns])[-50:]
                if step + 1 >= self.resume_at and not last:
                    self._resume(step + 1)
            return
        if (self.range is None or self.range[0] != serial) and self.ended != serial:
            return
        self._close_range()
        if step is None:
            return
        self.steps[serial] = step
        self.traced += 1
        self.chunk_walls.append(wall_ns)
        if memory is not None:
            self.memory.append(memory)
        if step + 1 - self.first >= self.length and not last:
            if self.share > 0 and not self._owed_fill_the_rest(step):
                self._sample(step)
            else:
                self._boundary(step)

    # --- sessions ----------------------------------------------------------------------------------------
    def _sample(self, step):
        """A sampled trace's chunk ends: stop, hand it over, and plan the untraced steps that pay for it."""
        t0 = time.monotonic_ns()
        chunk = self._stop()
        waited, room = self._room(chunk)
        saved = self.writer.save_here(chunk) if room else 0
        # Drawn in this chunk (as the run's last stop is): no next chunk may come for a long time.
        self._paused(Pause(t0, time.monotonic_ns(), "profiler stop", waited, saved))
        if room:
            forked = self._submit(chunk)
            self.pause_ns += forked
            self.total_pause_ns += forked
        t1 = time.monotonic_ns()
        gap = self.untraced_steps(t1 - t0)
        held = len(chunk.steps) if chunk is not None else 0
        self.length = self.chunk_length(t1 - t0, held)
        most = quota_gap(self.owed(), self._steps_left(step), self.length, held)  # planned with the next length
        self.resume_at = step + 1 + (gap if most is None else min(gap, most))
        self.gap_t0 = t1
        self.chunk_walls = []

    def chunk_length(self, stop_ns, steps):
        """The next sampled chunk's steps: as many as this chunk's stop `stop_ns` (all of it: the stop, the wait
        for room, the save or fork) says stop within one untraced step, between MIN_CHUNK and `every`."""
        step_ns = self._step_ns()
        if steps <= 0 or stop_ns <= 0 or step_ns <= 0:
            return self.length
        return max(min(self.every, MIN_CHUNK), min(self.every, int(step_ns * steps // stop_ns)))

    def owed(self):
        """Traced steps the quota still asks for."""
        return max(0, self.quota - self.traced)

    def _steps_left(self, step):
        """Steps the run makes after `step` (None: its length is not known: it runs to the script's end)."""
        n = self.run.steps_limit
        return max(0, n - 1 - step) if n else None

    def _owed_fill_the_rest(self, step):
        """The owed steps need every step the run has left after `step`: the next chunk follows without a gap."""
        return quota_gap(self.owed(), self._steps_left(step), self.length, 0) == 0

    def untraced_steps(self, stop_ns):
        """How many untraced steps keep this chunk's cost under `share`: its stop `stop_ns`, the next start
        (the last one's), and its steps' time beyond an untraced step's (once one was measured)."""
        walls = [w for w in self.chunk_walls if w > 0]
        traced = sum(walls)
        free = statistics.median(self.free_walls) if self.free_walls else 0
        excess = sum(max(0, w - free) for w in walls) if free else 0
        cost = stop_ns + self.start_cost_ns + excess
        step_ns = self._step_ns()
        if step_ns <= 0:
            return self.every
        need_ns = cost / self.share - traced - cost
        return max(1, int(math.ceil(need_ns / step_ns)))

    def _step_ns(self):
        """A step's time as planning takes it: the last untraced steps' median, else this chunk's (0: none)."""
        if self.free_walls:
            return statistics.median(self.free_walls)
        walls = [w for w in self.chunk_walls if w > 0]
        return statistics.median(walls) if walls else 0

    def _resume(self, at_step):
        """A sampled trace's next chunk starts: the untraced time before it is drawn in it, as such."""
        t0 = time.monotonic_ns()
        self.pending.append(Pause(self.gap_t0, t0, UNTRACED, 0))  # not TuneBench's pause: not in pause_ns
        self._start(at_step)
        t1 = time.monotonic_ns()
        self.start_cost_ns = t1 - t0
        self._paused(Pause(t0, t1, "profiler start", 0))
        self.resume_at = None

    def _boundary(self, step):
        t0 = time.monotonic_ns()
        self.chunk_walls = []  # a sampled trace's chunk costs are taken per chunk
        chunk = self._stop()
        waited, room = self._room(chunk)
        saved = self.writer.save_here(chunk) if room else 0
        self._start(step + 1)
        # After the start: the writer's thread, woken, would take the GIL from it.
        forked = self._submit(chunk) if room else 0
        self._paused(Pause(t0, time.monotonic_ns(), "profiler stop and start", waited, saved, forked))

    def _start(self, at_step):
        acts = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        self.prof = Session(activities=acts, record_shapes="shapes" in self.detail,
                                           with_stack="stack" in self.detail)
        self.prof.__enter__()
        loader_lanes.set_recording(True)  # every sample a loading process loads from now is on its lane
        self.base_us = time.monotonic_ns() // 1000  # the legacy export counts from here
        self.mark = clock_mark()
        self.first = at_step
        self.steps = {}
        self.memory = []
        hooks_forward.annotate = True

    def _stop(self):
        """Stops the session; its chunk (None when it holds no step)."""
        self._close_range()
        hooks_forward.annotate = False
        if torch.cuda.is_available():
            torch.cuda.synchronize()  # queued kernels belong in this chunk
        prof, self.prof = self.prof, None
        t = time.monotonic_ns()
        loader_lanes.set_recording(False)
        prof.__exit__(None, None, None)
        stop_ns = time.monotonic_ns() - t
        if not self.steps:
            return None
        self.chunk += 1
        chunk = Chunk(prof, os.path.join(self.dir, "chunk-%05d.json" % self.chunk), dict(self.steps),
                      self.base_us, self.mark, self.memory)
        chunk.stop_ns = stop_ns
        chunk.end_ns = t
        return chunk

    def _room(self, chunk):
        """(ns waited, room) for handing `chunk` to the writer; a chunk that gets no room is lost."""
        if chunk is None:
            return 0, False
        t = time.monotonic_ns()
        room = self.writer.wait_room(ROOM_TIMEOUT_S)
        if not room:
            self.run.ch.send("warning", message="trace chunk not written: the chunks before it were still being "
                                                "written after %d s" % ROOM_TIMEOUT_S)
        return time.monotonic_ns() - t, room

    def _submit(self, chunk):
        """Hands `chunk` to the writer with the pauses not drawn yet; ns the fork of its writer took."""
        chunk.pauses, self.pending = self.pending, []
        self.last = chunk
        return self.writer.submit(chunk)

    def _paused(self, pause):
        self.pending.append(pause)
        ns = pause.t1_ns - pause.t0_ns
        self.pause_ns += ns
        self.total_pause_ns += ns

    def _close_range(self):
        if self.range is not None:
            self.range[1].__exit__(None, None, None)
            self.range = None
