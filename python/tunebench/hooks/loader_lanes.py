"""The loader on the timeline: while a trace chunk records, each sample every loading process loads (a
DataLoader worker, or the training process with num_workers=0), with its parts nested in it, and each batch's
collate and pin, as events on a lane of the process that did it; and the training loop's queue of batches
(ready to take, and asked of the workers but not back yet) as counters.

A shared byte says when a chunk records (the tracer sets it; `on()` is what a loading process reads before a
sample: a memory read, ~50 ns): only then is every sample timed and kept as events. Each process keeps its
events (hooks/loader_parts.py's recorder) and appends them to DIR/lanes-<pid>.jsonl when it writes its totals;
the training process's trace writer takes what they wrote (`take`) after each chunk and writes it beside the
chunk as a file of its own, on the monotonic clock (`write_file`): the trace's merge puts it on the chunks'
clock (profiler/src/trace_io.cpp). A process's events are capped (MAX_EVENTS between two takes): a worker that
loaded more in one chunk loses the rest, counted as `dropped`.
"""

import json
import mmap
import os

CAT = "tunebench_loader"
MAX_EVENTS = 50_000
WRITE_EVERY_NS = 50_000_000  # a process with events writes them this often (its totals: once a second)
# The training process's loading and its pin-memory thread: lanes beside its training thread, under thread ids
# no real thread has (Linux's pid_max is at most 2^22).
LOADING_TID, PIN_TID = (1 << 30) + 1, (1 << 30) + 2
# Counters of the training loop's queue: batches the workers delivered that the loop has not taken (in the
# queue, or back out of order and held), and batches asked of them not delivered yet.
READY, IN_FLIGHT = "loader: batches ready", "loader: batches in flight"

_flag = None       # mmap of DIR/tracing: byte 0 is 1 while a chunk records
_dir = None
_offsets = {}      # lanes file -> bytes taken so far (the training process)
_depth = []        # (monotonic ns, ready, in flight) of the training loop's queue, while a chunk records


def create(out_dir):
    """The training process, when loader timing starts: the shared byte, 0."""
    global _dir
    _dir = out_dir
    path = os.path.join(out_dir, "tracing")
    with open(path, "wb") as f:
        f.write(b"\0")
    _map(path)


def join(out_dir):
    """A spawned worker: the training process's byte (a forked one inherits its mapping)."""
    global _dir
    _dir = out_dir
    if _flag is None:
        _map(os.path.join(out_dir, "tracing"))


def _map(path):
    global _flag
    try:
        with open(path, "r+b") as f:
            _flag = mmap.mmap(f.fileno(), 1)
    except (OSError, ValueError):
        _flag = None  # no lanes, the totals go on


def on():
    return _flag is not None and _flag[0] == 1


def active():
    """The loader is timed in this run (create() was called here, or join())."""
    return _dir is not None


def set_recording(recording):
    """The tracer: a chunk starts (True) or stops."""
    if _flag is not None:
        _flag[0] = 1 if recording else 0


def queue_depth(it, t_ns):
    """The training loop just took a batch from `it` (a multi-process DataLoader iterator): its queue now."""
    if len(_depth) >= MAX_EVENTS:
        return
    q = getattr(it, "_data_queue", None)
    info = getattr(it, "_task_info", None)
    if q is None or info is None:
        return
    try:
        # torch counts a batch outstanding from its request until the loop pulls it off the queue (one back out
        # of order is pulled, and held in _task_info with its data).
        queued = q.qsize()
        held = sum(1 for v in list(info.values()) if len(v) == 2)
        _depth.append((t_ns, queued + held, max(0, int(getattr(it, "_tasks_outstanding", 0)) - queued)))
    except (NotImplementedError, OSError, TypeError):
        pass  # a queue that cannot say its size


def append(rec):
    """A loading process's events since its last write, onto its lanes file (its recorder's `events`)."""
    if not rec.events or _dir is None:
        return
    events, rec.events = rec.events, []
    line = json.dumps({"pid": rec.pid, "who": rec.who, "tid": rec.tid, "events": events,
                       "dropped": rec.dropped}) + "\n"
    rec.dropped = 0
    try:
        with open(os.path.join(_dir, "lanes-%d.jsonl" % rec.pid), "a") as f:
            f.write(line)
    except OSError:
        pass


def take():
    """The training process: every lanes line written since the last take, and its queue's counters."""
    global _depth
    groups = []
    if _dir is None:
        return groups, []
    try:
        names = sorted(n for n in os.listdir(_dir) if n.startswith("lanes-") and n.endswith(".jsonl"))
    except OSError:
        names = []
    for name in names:
        path = os.path.join(_dir, name)
        try:
            with open(path, "rb") as f:
                f.seek(_offsets.get(path, 0))
                data = f.read()
        except OSError:
            continue
        end = data.rfind(b"\n") + 1  # a line being written is taken next time
        _offsets[path] = _offsets.get(path, 0) + end
        for line in data[:end].splitlines():
            try:
                groups.append(json.loads(line))
            except ValueError:
                pass
    depth, _depth = _depth, []
    return groups, depth


def _lane(group, train_pid):
    """(pid, tid, process name, thread name) of a group's lane: a worker's own process; the training
    process's loading and its pin-memory thread on lanes of their own beside its training thread."""
    who = group.get("who", "")
    if who.startswith("worker"):
        return group["pid"], group["pid"], "DataLoader " + who, "loading"
    tid = group.get("tid", LOADING_TID)
    return train_pid, tid, None, "pin memory thread" if tid == PIN_TID else "DataLoader (training process)"


def trace_events(groups, depth, train_pid):
    """Chrome trace events (µs of the monotonic clock) for what `take` gave."""
    out, named = [], set()
    for g in groups:
        pid, tid, pname, tname = _lane(g, train_pid)
        if (pid, tid) not in named:
            named.add((pid, tid))
            if pname:
                out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": pname}})
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": tname}})
        for name, t0, dt in g.get("events", ()):
            out.append({"ph": "X", "cat": CAT, "name": name, "pid": pid, "tid": tid,
                        "ts": round(t0 / 1000.0, 3), "dur": round(dt / 1000.0, 3)})
    for t, ready, flight in depth:
        out.append({"ph": "C", "name": READY, "pid": train_pid, "tid": 0, "ts": round(t / 1000.0, 3),
                    "args": {"value": ready}})
        out.append({"ph": "C", "name": IN_FLIGHT, "pid": train_pid, "tid": 0, "ts": round(t / 1000.0, 3),
                    "args": {"value": flight}})
    return out


def write_file(path, groups, depth, train_pid):
    """The lanes as a trace file of their own, on the monotonic clock (the merge moves it onto the chunks');
    False when there was nothing to draw."""
    events = trace_events(groups, depth, train_pid)
    if not events:
        return False
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"tunebench_clock": "monotonic", "traceEvents": events}, f)
    os.replace(tmp, path)
    return True
