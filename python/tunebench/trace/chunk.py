"""One exported trace chunk made final: the spans' ranges named as steps, the machine's cores, the run's kind
(`tunebench_run`: "script"), TuneBench's own pauses at chunk boundaries and the memory after each step (counters)
drawn on the chunk's clock.

This runs on the trace writer's thread while the script trains, so it must not hold the GIL for long: a
chunk from a GPU run is 100+ MB, and json.load of 115 MB held it 4.6 s here (the training thread stood still
as long). Kineto's object form is therefore rewritten as text, in blocks (a regular expression per block
holds the GIL well under a millisecond; reads and writes release it), in two passes: one finds the clock
marker, one writes. Only torch's legacy export (a bare event array, from a torch without Kineto: small CPU traces) and a
layout the text pass does not recognise go through json.load.

Kineto's `ts` is not time.monotonic_ns(): on torch 2.11 it is CLOCK_REALTIME in µs less the document's
baseTimeNanoseconds (converted from the TSC), and the legacy export counts from the profiler's start. So no
clock is assumed: each session enters a `TuneBench: clock` range right after it starts, with monotonic time
read just before (tracer.clock_mark), and the marker's `ts` in the exported chunk gives the offset between
the two clocks (and the pid and tid under which Kineto writes the training thread). A marker whose reading was
far from its stamp (the thread descheduled between them) is entered again as `TuneBench: clock #2`, `#3`, ...:
the ClockMark names the one to read."""

import collections
import json
import os
import re

CLOCK_MARK = "TuneBench: clock"
PAUSE_NAME = "TuneBench: trace chunk boundary"
# A sampled trace's steps between two chunks, run unrecorded (a Pause whose `what` is UNTRACED): the analyses
# leave it out of their window; it is not TuneBench's pause either (the script ran its steps).
UNTRACED = "untraced steps"
UNTRACED_NAME = "TuneBench: untraced steps"
PAUSE_CAT = "tunebench"
OUTSIDE = "## outside training ##"
SPAN = "tunebench.span#"
TMP_SUFFIX = ".rewrite.tmp"  # the rewrite's file before it replaces the chunk (Kineto's export uses ".tmp")
# The chunk's own top-level fields besides Kineto's: the analyses read them as the trace's metadata (string
# values only). "tunebench_run" says whose knobs a finding may propose: a script's (the engine's say "engine").
RUN_KIND = "script"
# A step's `memory` key -> the counter it is drawn as: the names the engine's traces use
# (profiler/include/profiler/range_names.h), so one analysis reads both.
MEMORY_COUNTERS = (("host_rss", "memory: host RSS"), ("device_allocated", "memory: device allocated"),
                   ("device_reserved", "memory: device reserved"), ("device_peak", "memory: device peak"),
                   ("device_alloc_retries", "memory: cudaMalloc retries"))

# A pause TuneBench made on the training thread (monotonic ns). Inside t0..t1: writer_wait_ns waiting for the
# writer to have room, save_ns saving the chunk in place, fork_ns forking its writer (writer.py).
Pause = collections.namedtuple("Pause", "t0_ns t1_ns what writer_wait_ns save_ns fork_ns", defaults=(0, 0))
# A session's clock marker: monotonic ns read just before it was entered, its name, and how long from that
# reading to the enter call's return (the marker's stamp lies in between: the mapping's uncertainty).
ClockMark = collections.namedtuple("ClockMark", "ns name bracket_ns", defaults=(CLOCK_MARK, 0))


def clock_mark_name(attempt):
    """The clock marker's name at its `attempt`-th entry in a session (0: the first)."""
    return CLOCK_MARK if attempt == 0 else "%s #%d" % (CLOCK_MARK, attempt + 1)

_BLOCK = 1 << 18       # a regular expression over 256 KB holds the GIL well under a millisecond
_HEAD_MAX = 16 << 20   # the object form's header (device properties, distributed info) is a few KB
_SPAN_RE = re.compile(rb'"' + re.escape(SPAN.encode()) + rb'(\d+)"')
_FIELD_RE = re.compile(rb'"(pid|tid|ts)"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)')
_EVENTS_RE = re.compile(rb'"traceEvents"\s*:\s*\[')
# A Python frame's name as Kineto writes it, unescaped: a module imported inside a chunk recorded with stacks
# came out as `"name": "PIL/ImageFile.py(0): """",` (the module's first line), and the whole chunk failed to
# parse. The name ends where Kineto's next field begins.
_PYNAME_RE = re.compile(rb'("cat": "python_function", "name": ")([^\n]*?)(", "pid": )')
_BARE_QUOTE_RE = re.compile(rb'(?<!\\)"')


def _escape_name(m):
    return m.group(1) + _BARE_QUOTE_RE.sub(rb'\\"', m.group(2)) + m.group(3)


def finish_chunk(path, steps, base_us, clock, pauses, cores, memory=()):
    """Rewrites the chunk at `path` in place (a new file moved over it: a reader never sees half of it).
    steps: span serial -> step number (the other spans are outside training); base_us: monotonic µs at the
    session's start (the legacy export counts from there); clock: the session's ClockMark (None: none was
    entered); pauses: Pause records to draw; memory: (a step's end, monotonic ns; its `memory`
    object) for each step, drawn as counters. Returns the number of pauses drawn (0 when the chunk holds no
    marker to place them, or the counters, by)."""
    with open(path, "rb") as f:
        first = f.read(4096).lstrip()[:1]
    if first == b"{":
        drawn = _finish_object_text(path, steps, clock, pauses, cores, memory)
        if drawn is not None:
            return drawn
    return _finish_json(path, steps, base_us, clock, pauses, cores, memory)


def _to_chunk_us(mark, mark_ns):
    """Monotonic ns -> µs on the chunk's clock. mark: (pid, tid, ts) of the clock marker."""
    offset_us = mark[2] - mark_ns / 1000.0
    return lambda t_ns: round(t_ns / 1000.0 + offset_us, 3)


def pause_events(pauses, mark, mark_ns):
    """The complete events of `pauses` on the chunk's clock, on the training thread's row."""
    pid, tid, _ = mark
    at = _to_chunk_us(mark, mark_ns)
    return [{"ph": "X", "cat": PAUSE_CAT, "name": UNTRACED_NAME if p.what == UNTRACED else PAUSE_NAME, "pid": pid, "tid": tid,
             "ts": at(p.t0_ns), "dur": round((p.t1_ns - p.t0_ns) / 1000.0, 3),
             "args": {"what": p.what, "writer_wait_us": round(p.writer_wait_ns / 1000.0, 3),
                      "save_us": round(p.save_ns / 1000.0, 3), "fork_us": round(p.fork_ns / 1000.0, 3)}}
            for p in pauses]


def memory_events(memory, mark, mark_ns):
    """A counter event per measured key of each step's `memory`, at the step's end on the chunk's clock, under
    the training thread's process (a counter track is the process's: tid 0)."""
    pid = mark[0]
    at = _to_chunk_us(mark, mark_ns)
    return [{"ph": "C", "name": name, "pid": pid, "tid": 0, "ts": at(end_ns), "args": {"value": m[key]}}
            for end_ns, m in memory for key, name in MEMORY_COUNTERS if key in m]


def _drawn(mark, clock, pauses, memory):
    """Our events for the chunk: its pauses, then its memory counters ([] without a marker to place them)."""
    if mark is None or clock is None:
        return []
    return pause_events(pauses, mark, clock.ns) + memory_events(memory, mark, clock.ns)


def _top_fields(cores, mark=None, clock=None):
    """The chunk's own fields. With its clock marker: the monotonic clock's offset to the chunk's (µs, a text
    as the trace reader keeps top fields), which puts the loader's lanes, recorded on the monotonic clock
    (hooks/loader_lanes.py), on the chunks' when the trace is merged (it is the same for every chunk), and
    how far that offset may be off (the marker's bracket: a stamp late by up to as much)."""
    fields = {"cpu_cores": str(cores), "tunebench_run": RUN_KIND}
    if mark is not None and clock is not None:
        fields["tunebench_clock_offset_us"] = "%.3f" % (mark[2] - clock.ns / 1000.0)
        fields["tunebench_clock_bracket_us"] = "%.3f" % (clock.bracket_ns / 1000.0)
    return fields


def _step_name(steps, serial):
    step = steps.get(serial)
    # A span that stayed no training iteration (a validation batch) keeps its range under its own name: the
    # timeline shows that time as outside training, and the profiler's event numbering stays whole (a gap
    # in it says a trace was sampled).
    return OUTSIDE if step is None else "ProfilerStep#%d" % step


# --- Kineto's object form, as text ---------------------------------------------------------------------------
class _More:
    """A look at the buffer that needs the next block: the buffer keeps buf[keep:], what that block may complete."""

    def __init__(self, keep=0):
        self.keep = keep


def _read_until(f, look, most=None):
    """Reads `f` block by block onto one buffer (a trace is too large to read whole), asking `look(buf)` after
    each: (its answer, the buffer) once it answers anything but _More; (None, the buffer) when the file ends
    first or the buffer outgrows `most`."""
    buf = b""
    while True:
        block = f.read(_BLOCK)
        buf += block
        answer = look(buf)
        if not isinstance(answer, _More):
            return answer, buf
        if not block or (most is not None and len(buf) > most):
            return None, buf
        buf = buf[answer.keep:]


def _find_mark(path, name):
    """(pid, tid, ts) of the clock marker named `name`, or None. Kineto writes an event's fields before its args,
    so the marker's own fields lie between the `{` before its name and the next brace after it."""
    mark_re = re.compile(rb'"name"\s*:\s*"' + re.escape(name.encode()) + rb'"')

    def look(buf):
        m = mark_re.search(buf)
        if m is None:
            return _More(-256)  # a name cut by the block's end is found with the next block
        start = buf.rfind(b"{", 0, m.start())
        ends = [i for i in (buf.find(b"{", m.end()), buf.find(b"}", m.end())) if i >= 0]
        if start < 0:
            return None
        if not ends:
            return _More(start)  # the event goes on in the next block
        fields = {k.decode(): json.loads(v) for k, v in _FIELD_RE.findall(buf[start:min(ends)])}
        if not isinstance(fields.get("ts"), (int, float)) or "pid" not in fields or "tid" not in fields:
            return None
        return fields["pid"], fields["tid"], float(fields["ts"])

    with open(path, "rb") as f:
        return _read_until(f, look)[0]


def _finish_object_text(path, steps, clock, pauses, cores, memory):
    """The text pass; None when the layout is not Kineto's (no `"traceEvents": [` in the header)."""
    mark = _find_mark(path, clock.name) if clock is not None and (pauses or memory) else None
    events = _drawn(mark, clock, pauses, memory)

    def rename(m):
        return b'"' + _step_name(steps, int(m.group(1))).encode() + b'"'

    def events_start(buf):  # the event array's opening, once something follows it
        m = _EVENTS_RE.search(buf)
        return m if m and buf[m.end():].lstrip() else _More()

    tmp = path + TMP_SUFFIX
    with open(path, "rb") as src:
        m, head = _read_until(src, events_start, most=_HEAD_MAX)
        if m is None:
            return None
        rest = head[m.end():].lstrip()
        brace = head.index(b"{")
        inserted = b"".join(json.dumps(e).encode() + b",\n" for e in events)
        if events and rest[:1] == b"]":
            inserted = inserted[:-2]  # an empty event array: no comma after ours
        with open(tmp, "wb") as dst:
            dst.write(head[:brace + 1] + b"".join(json.dumps(k).encode() + b": " + json.dumps(v).encode() + b", "
                                                  for k, v in _top_fields(cores, mark, clock).items()))
            dst.write(head[brace + 1:m.end()] + b"\n" + inserted)
            carry = head[m.end():]
            while True:
                block = src.read(_BLOCK)
                buf = carry + block
                if block:
                    cut = buf.rfind(b"\n") + 1  # a JSON string holds no raw newline: no name is cut at one
                    if cut == 0:
                        carry = buf
                        continue
                    buf, carry = buf[:cut], buf[cut:]
                dst.write(_SPAN_RE.sub(rename, _PYNAME_RE.sub(_escape_name, buf)))
                if not block:
                    break
    os.replace(tmp, path)
    return len(pauses) if events else 0


# --- the legacy array, and anything else, through json ------------------------------------------------------
def _finish_json(path, steps, base_us, clock, pauses, cores, memory):
    """Also moves the legacy export's events onto the monotonic clock (they count from the session's start),
    so that chunks merged into one trace follow each other instead of all starting at 0. Kineto's object
    form keeps its own absolute times."""
    with open(path) as f:
        doc = json.load(f)
    events = doc if isinstance(doc, list) else doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        return 0
    mark = None
    for e in events:
        if not isinstance(e, dict):
            continue
        if isinstance(doc, list) and isinstance(e.get("ts"), (int, float)):
            e["ts"] += base_us
        name = e.get("name")
        if isinstance(name, str) and name.startswith(SPAN):
            try:
                e["name"] = _step_name(steps, int(name[len(SPAN):]))
            except ValueError:
                pass
        elif clock is not None and name == clock.name and isinstance(e.get("ts"), (int, float)) and mark is None:
            mark = (e.get("pid"), e.get("tid"), float(e["ts"]))
    if isinstance(doc, list):
        doc = {"traceEvents": events}
    added = _drawn(mark, clock, pauses, memory)
    events.extend(added)
    doc.update(_top_fields(cores, mark, clock))
    tmp = path + TMP_SUFFIX
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)
    return len(pauses) if added else 0
