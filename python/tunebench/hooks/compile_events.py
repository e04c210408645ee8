"""What torch.compile did, read from what PyTorch already emits: torch._dynamo's structured trace.

torch's `trace_structured()` (torch._logging._internal) builds a record only while the logger "torch.__trace"
(`trace_log`, always DEBUG, never propagating) has a handler; ours is one more handler beside torch's own
(TORCH_TRACE keeps its file). Nothing of torch is patched. Each record carries `metadata` (one key naming it,
plus frame_id / frame_compile_id / attempt) and a `payload` string. What is read (torch 2.11):
  * "chromium_event": {"name", "ts" (wall µs), "ph": "B"/"E", "args"}: the ranges of one compile.
    entire_frame_compile (a frame's compile) and entire_backward_compile (the lazy backward's) are the top-level
    ranges; inside them the phases: bytecode_tracing (dynamo), create_aot_dispatcher_function (aot),
    inductor_compile or, on an AOTAutograd cache hit, AOTAutogradCache.inductor_load (inductor), code_gen,
    PyCodeCache.load_by_key_path, compile_file, async_compile.wait (codegen), build_guards (guards); a phase
    is kept as its outermost range (codegen's names nest).
  * "compilation_metrics" / "bwd_compilation_metrics": the compile's end: its code object, its failure. The
    `compile` message (docs/protocol.md) is sent then, from the thread that compiled.
  * "inductor_output_code" and the artifact "inductor_provenance_tracking_kernel_stack_traces": the compile's
    kernels, their ops and the user's lines (compile_kernels.py reads them; a traced run switches them on).
  * "artifact" "recompile_reasons": the guard failures that made this compile (one a cached compile) and
    "dynamo_graph_break_reason": a graph break's user stack and traceback (compile_text.py reads both into a
    line: which failure is said, where a break is placed).
The wall clock is moved to the monotonic one (the steps' t_ns) by an offset read at install and again at each
compile's start (a long run's wall clock may be slewed).

Cost. Nothing when nothing compiles: torch calls the logger only while compiling, and the step reads and
resets one int (take_ns). While compiling, a handler makes torch build every record's metadata and payload
(graphs printed, guards, generated code; ~190 records for a small model's compile and backward, many more with
Inductor's passes) and ours parse a few; torch times that itself, our handler inside, as each compile's
`structured_logging_overhead_s`. Measured here (bench/bench_compile_events.py --rounds 3..6: fresh processes with
and without the handler, alternating; 2-core VM at load 2.5-3.2, torch 2.11 CPU, warm Inductor cache): 11-13 ms
a compile for a 3-layer MLP and 26-36 ms for a 4-layer TransformerEncoder (d=64), forward and backward
together: 1.5-1.8% of an aot_eager compile (0.7 and 2.0 s) and 0.1-0.2% of an Inductor one (~10 s, most of it
torch's check of the CPU's vector ISA). The processes' compile times differed by less than their noise, except
the TransformerEncoder under aot_eager: +0.19 s median (+0.08..+0.81 over 6 pairs) with the handler, which
cProfile of one compile in one process does not show (trace_structured: 191 calls, 41 ms cumulative; the
compile's total the same with and without, 4.60 and 4.68 s), so it is read as the loaded machine's.
"""

import json
import logging
import os
import threading
import time

from . import compile_kernels
from . import compile_text
from . import model as hooks_model

_PHASE = {
    "bytecode_tracing": "dynamo",
    "create_aot_dispatcher_function": "aot",
    "inductor_compile": "inductor",
    "AOTAutogradCache.inductor_load": "inductor",
    "code_gen": "codegen",
    "PyCodeCache.load_by_key_path": "codegen",
    "compile_file": "codegen",
    "async_compile.wait": "codegen",
    "build_guards": "guards",
}
_TOP = {"entire_frame_compile": False, "entire_backward_compile": True}
_MAX_PHASES = 64     # ranges in one message (a pathological compile: many waits)
_MAX_BREAKS = 16
_PROVENANCE = "inductor_provenance_tracking_kernel_stack_traces"
_MAX_FRAMES = 4096   # forward compiles remembered for their backward's frame

_run = None
_on_error = None
_handler = None
_lock = threading.Lock()
_ns = 0              # top-level compile time ended since the last take or reset
_offset_ns = 0       # wall - monotonic
_open = {}           # (id, backward) -> _Compile
_frames = {}         # id -> (frame, file, line) of a forward compile, for its backward's message
_cwd = ""            # the launcher's start: what a relative code path (the script run as `train.py`) is under


def _measure_offset():
    global _offset_ns
    m0 = time.monotonic_ns()
    w = time.time_ns()
    m1 = time.monotonic_ns()
    _offset_ns = w - (m0 + m1) // 2


def _mono(ts_us):
    return int(ts_us * 1000) - _offset_ns


def _abs(path):
    if isinstance(path, str) and path and not path.startswith("<") and not os.path.isabs(path):
        return os.path.normpath(os.path.join(_cwd, path))
    return path


class _Compile:
    __slots__ = ("cid", "backward", "t0", "dur", "phases", "depth", "starts", "recompile", "breaks", "kernels")

    def __init__(self, cid, backward):
        self.cid, self.backward = cid, backward
        self.t0 = self.dur = None
        self.phases = []      # [name, t_ns, dur_ns]
        self.depth = {}       # phase -> ranges of it open
        self.starts = {}      # phase -> start of its outermost open range
        self.recompile = None
        self.breaks = []
        self.kernels = {}     # name -> compile_kernels' record, in the order the code defines them

    def begin(self, phase, t):
        d = self.depth.get(phase, 0)
        if d == 0:
            self.starts[phase] = t
        self.depth[phase] = d + 1

    def end(self, phase, t):
        d = self.depth.get(phase, 0)
        if d <= 0:
            return  # its start was before we listened
        self.depth[phase] = d - 1
        if d == 1 and len(self.phases) < _MAX_PHASES:
            t0 = self.starts.pop(phase)
            self.phases.append([phase, t0, max(0, t - t0)])


def _key(md, args=None):
    """The compile's id, "frame/compile" (torch's CompileId without attempt), or None."""
    f, c = md.get("frame_id"), md.get("frame_compile_id")
    if isinstance(f, int) and isinstance(c, int):
        return "%d/%d" % (f, c)
    cid = args.get("compile_id") if isinstance(args, dict) else None
    if isinstance(cid, str) and cid.count("/") == 1 and cid.replace("/", "").isdigit():
        return cid
    return None


def _event(md, payload):
    global _ns
    ev = json.loads(payload)
    name, ph = ev.get("name"), ev.get("ph")
    if ph not in ("B", "E"):
        return
    cid = _key(md, ev.get("args"))
    if cid is None:
        return  # a compile thread's own range (compile_file of a worker): inside the caller's wait
    if name in _TOP:
        backward = _TOP[name]
        if ph == "B":
            _measure_offset()
            rec = _open.get((cid, backward))
            if rec is None or rec.t0 is not None:
                rec = _open[(cid, backward)] = _Compile(cid, backward)
            rec.t0 = _mono(ev["ts"])
        else:
            rec = _open.get((cid, backward))
            if rec is None or rec.t0 is None or rec.dur is not None:
                return
            rec.dur = max(0, _mono(ev["ts"]) - rec.t0)
            with _lock:
                _ns += rec.dur
        return
    phase = _PHASE.get(name)
    if phase is None:
        return
    rec = _open.get((cid, True)) or _open.get((cid, False))  # a lazy backward's while it is open, else the frame's
    if rec is None or rec.t0 is None:
        return
    if ph == "B":
        rec.begin(phase, _mono(ev["ts"]))
    else:
        rec.end(phase, _mono(ev["ts"]))


def _finished(md, backward):
    """A compile's metrics: its last record. Sends its `compile` message."""
    global _ns
    m = md.get("bwd_compilation_metrics" if backward else "compilation_metrics")
    if not isinstance(m, dict):
        return
    cid = m.get("compile_id")
    if not isinstance(cid, str):
        cid = _key(md)
    rec = _open.pop((cid, backward), None) or _Compile(cid, backward)
    if backward:
        frame, file, line = _frames.get(cid, (None, None, None))
    else:
        frame, file, line = m.get("co_name"), _abs(m.get("co_filename")), m.get("co_firstlineno")
        if frame == hooks_model.MODEL_CALL:  # the compile knob's frame: the model's call, named for its class
            frame, file, line = _model_site()
        if len(_frames) >= _MAX_FRAMES:
            _frames.pop(next(iter(_frames)))
        _frames[cid] = (frame, file, line)
    t0, dur = rec.t0, rec.dur
    if dur is None:  # its ranges not seen (another torch): the metrics' own times
        start, took = m.get("start_time"), m.get("entire_frame_compile_time_s")
        t0 = int(start * 1e9) - _offset_ns if isinstance(start, (int, float)) else t0
        dur = int(took * 1e9) if isinstance(took, (int, float)) else 0
        with _lock:
            _ns += dur
    fail = m.get("fail_type")
    failed = compile_text.one_line("%s: %s" % (fail, m.get("fail_reason") or "")) if fail else None
    phases = sorted(rec.phases, key=lambda p: p[1])
    for k in rec.kernels.values():  # a script started by a relative path: its stacks name it so
        for line in k["lines"]:
            line["file"] = _abs(line["file"])
    if _run is not None:
        _run.ch.send("compile", id=cid, frame=frame, file=file, line=line, t_ns=t0, dur_ns=dur, backward=backward,
                     phases=[{"name": n, "t_ns": t, "dur_ns": d} for n, t, d in phases],
                     recompile=rec.recompile, graph_breaks=rec.breaks, failed=failed,
                     kernels=list(rec.kernels.values()))


def _model_site():
    """(frame, file, line) for the compile knob's frame: the model's class and where the script calls it."""
    site = getattr(_run, "forward_site", None) if _run is not None else None
    if not site:
        return "the model (compile=on)", None, None
    cls, file, line = site
    return "%s (compile=on)" % cls, _abs(file), line


def _open_compile(md):
    """The compile a record of Inductor's belongs to: a lazy backward's while it is open, else the frame's."""
    cid = _key(md)
    if cid is None:
        return None
    rec = _open.get((cid, True)) or _open.get((cid, False))
    return rec if rec is not None and rec.t0 is not None else None


def _kernels(md, payload):
    rec = _open_compile(md)
    if rec is None:
        return
    if "inductor_output_code" in md:
        for name, k in compile_kernels.output_code(payload).items():
            rec.kernels.setdefault(name, k)
    else:
        compile_kernels.provenance(payload, rec.kernels)


def _artifact(md, payload):
    name = md["artifact"].get("name") if isinstance(md.get("artifact"), dict) else None
    if name == _PROVENANCE:
        _kernels(md, payload)
        return
    if name not in ("recompile_reasons", "dynamo_graph_break_reason"):
        return
    cid = _key(md)
    if cid is None:
        return
    rec = _open.get((cid, False))
    if rec is None:
        rec = _open[(cid, False)] = _Compile(cid, False)
    if name == "recompile_reasons":
        if rec.recompile is None:
            rec.recompile = compile_text.recompile_reason(payload)
    else:
        brk = compile_text.graph_break(payload)
        if brk is not None:
            brk["file"] = _abs(brk["file"])
            if brk not in rec.breaks and len(rec.breaks) < _MAX_BREAKS:
                rec.breaks.append(brk)


def _record(md, payload):
    if "chromium_event" in md:
        if payload:
            _event(md, payload)
    elif "artifact" in md:
        _artifact(md, payload)
    elif "inductor_output_code" in md:
        _kernels(md, payload)
    elif "compilation_metrics" in md:
        _finished(md, False)
    elif "bwd_compilation_metrics" in md:
        _finished(md, True)


class _Handler(logging.Handler):
    """Called by torch in the compiling thread, only while compiling."""

    def handle(self, record):  # no filters, no lock of logging's: our state is per compile id
        md = getattr(record, "metadata", None)
        if not isinstance(md, dict) or _run is None:
            return False
        try:
            _record(md, getattr(record, "payload", None))
        except Exception as e:  # noqa: BLE001 - never into torch's compile
            _fail(e)
        return True

    def emit(self, record):
        self.handle(record)


def _trace_log():
    try:
        from torch._logging import _internal
    except ImportError:
        return None
    log = getattr(_internal, "trace_log", None)
    return log if isinstance(log, logging.Logger) else None


def install(run, on_error=None):
    """Listens to torch's structured trace for `run` (its channel). Off, silently, where torch has no
    trace_log. on_error(e): our own bug, after which compiles are no longer reported (the rest runs on)."""
    global _run, _on_error, _handler, _cwd
    log = _trace_log()
    if log is None:
        return False
    _run, _on_error, _cwd = run, on_error, os.getcwd()
    _measure_offset()
    if _handler is None:
        _handler = _Handler(logging.DEBUG)
        log.addHandler(_handler)
    return True


def _fail(e):
    on_error = _on_error
    disable()
    if on_error is not None:
        on_error(e)


def take_ns():
    """The top-level compile time that ended since the last take or reset (a step's compile_ns)."""
    global _ns
    if not _ns:
        return 0
    with _lock:
        ns, _ns = _ns, 0
    return ns


def reset():
    """A span opens: what compiled outside any step (before it, at validation) is no step's."""
    global _ns
    if _ns:
        with _lock:
            _ns = 0


def disable():
    """Stops reporting and takes the handler off (torch then builds no record for us): after our own error, in
    a forked child, at the run's end."""
    global _run, _on_error, _handler
    _run = _on_error = None
    if _handler is not None:
        log = _trace_log()
        if log is not None:
            log.removeHandler(_handler)
        _handler = None
    _open.clear()


uninstall = disable
