"""python -m tunebench.launch [--out-fd N] [--in-fd N] [--set k=v,...] [--steps N] [--trace-dir DIR]
                              [--trace-every N] [--trace-share S] [--trace-steps K] [--trace-detail shapes,stack]
                              [--trace-wait] [--stall-warn S]
                              [--source FILE COPY]... SCRIPT [ARGS...]

Runs SCRIPT unmodified as __main__ under TuneBench's hooks and speaks the run protocol (docs/protocol.md)
on --out-fd (default 1) and --in-fd. A step is one training iteration (iterations.py says exactly what that
is); time between iterations (validation, checkpoints) is sent as `outside` messages. `hello` goes out with
the first step, when the script's DataLoader and optimizer exist and the knobs have their real values.

The script sees no difference: its stdout is its own, an exception it raises prints the traceback Python
would print (without our frames) and exits 1, sys.exit(code) exits with that code, and its atexit handlers
run. Only when TuneBench ends the run itself (--steps reached, a `stop`) does the process end at once, at a
step boundary. Launcher exit codes of its own: 1 (the script made no training step), 2 (bad options or
knobs). A script whose training runs in child processes it started (Hogwild: torch.multiprocessing children
train a shared model) is said to be so in one warning, `kind: "children"`, and ends with its own exit code;
`done.summary.no_steps` says in one line why any run made no step.
"""

import argparse
import os
import platform
import runpy
import signal
import sys
import tempfile
import threading
import time
import traceback

import torch

from . import __version__, iterations, knobs, machine, memory, patched, script_errors
from .hooks import children as hooks_children, compile_events, compile_kernels, dataloader as hooks_dataloader
from .hooks import forward as hooks_forward
from .hooks import loader_parts, loader_receive, optimizer as hooks_optimizer, save as hooks_save, update as hooks_update
from .protocol import Channel, Inbox, step_line
from .state import Run, minor_faults
from .trace.tracer import Tracer
from .watchdog import Watchdog

_MODEL_KNOBS = ("amp", "channels_last", "compile")
_HOOKS = (hooks_dataloader, hooks_forward, hooks_optimizer, hooks_save, hooks_update, hooks_children, compile_events)


def _processes(n):
    return "%d child process%s" % (n, "" if n == 1 else "es")


def _trace_detail(text):
    parts = [p for p in text.split(",") if p]
    bad = [p for p in parts if p not in ("shapes", "stack")]
    if bad:
        raise argparse.ArgumentTypeError("unknown trace detail %s (shapes, stack)" % ", ".join(bad))
    return parts


# The most of a run that watching it may take (client/inputs.h kTraceShareMax, the CLI's rule).
TRACE_SHARE_MAX = 0.5


def _trace_share(text):
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not 0 <= v <= TRACE_SHARE_MAX:
        raise argparse.ArgumentTypeError("needs a share of the run from 0 (trace every step) to %g, got '%s'"
                                         % (TRACE_SHARE_MAX, text))
    return v


def _trace_steps(text):
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError("needs a number of traced steps, 0 or more (0: no quota), got '%s'" % text)
    return v


def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m tunebench.launch", add_help=True)
    p.add_argument("--out-fd", type=int, default=1)
    p.add_argument("--in-fd", type=int, default=None)
    p.add_argument("--set", default="")
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--trace-dir", default="")
    p.add_argument("--trace-every", type=int, default=20)
    p.add_argument("--trace-share", type=_trace_share, default=0.01,
                   help="sample the trace: chunks of 3 to --trace-every steps (each as long as keeps its stop within "
                        "a step) with untraced steps between them, as many as keep watching under this share of the "
                        "run's time (0: trace every step, in chunks of --trace-every)")
    p.add_argument("--trace-steps", type=_trace_steps, default=0,
                   help="a sampled trace holds at least this many traced steps when the run makes that many after "
                        "tracing starts: spread over the rest of a run of known --steps, at least every other step "
                        "until held when the run's length is unknown (0: no quota, the share alone)")
    p.add_argument("--trace-detail", default="", type=_trace_detail,
                   help="what the profiler also records: shapes (record_shapes), stack (with_stack)")
    p.add_argument("--trace-wait", action="store_true",
                   help="with --trace-dir: trace from the first `trace start` message on, not from the start "
                        "(run --trace measures untraced steps first: the reference for tracing's own cost), or "
                        "from where the rest of a run of --steps N is what --trace-steps asks, if that is sooner")
    p.add_argument("--stall-warn", type=float, default=120.0,
                   help="warn once when no training step came for this many seconds (0: never)")
    p.add_argument("--source", nargs=2, action="append", default=[], metavar=("FILE", "COPY"),
                   help="run COPY in place of FILE, as FILE (the tuner's check of a patch it wrote)")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    return p.parse_args(argv)


class Launcher(iterations.Sink):
    def __init__(self, opts):
        self.opts = opts
        self.ch = Channel(opts.out_fd)
        self.inbox = Inbox(opts.in_fd, lambda line: self.ch.send("error", recoverable=True,
                                                                  message="malformed message: " + line[:120]))
        self.run = Run(self.ch, self.inbox, opts.steps)
        self.tracer = None
        self.step_memory = memory.StepMemory(self.run)
        self.tracker = iterations.Iterations(self, self.run.now_ns, self.run.optimizer_ids)
        self.outside_total = {"evaluation_ns": 0, "checkpoint_ns": 0, "other_ns": 0, "intervals": 0}
        self.done = False
        self.pending = []         # parent messages read outside the iterations, handled at the next step
        self.boundary_faults = None
        self.cpu0 = None          # process CPU time at the first step's end (loader_parts weighs it)
        self.children_lock = threading.Lock()
        self.children_said = False
        self.children_timer = None

    # --- lifecycle ---------------------------------------------------------------------------------------
    def finish(self, reason, code, hard=False):
        """Sends `done`. hard: TuneBench ends the run (--steps, stop) at a step boundary: exit now, with `code`.
        Otherwise the script ended by itself and the caller lets Python exit as it would have."""
        if self.done:
            return code
        run = self.run
        if self.children_timer is not None:
            self.children_timer.cancel()
        self.say_children()  # before `done`, which nothing follows
        self.done = True
        self.tracker.finish(run.now_ns())
        for h in _HOOKS:
            h.disable()
        if self.tracer is not None:
            self.tracer.stop()
            self.tracer.flush()  # every chunk announced before `done`, the parent's last message
        no_steps = None
        if run.hello_sent:
            pass
        elif hooks_children.training:
            no_steps = "the training ran in %s (torch.multiprocessing), which TuneBench does not follow: this " \
                       "process made no training step" % _processes(hooks_children.training)
        elif hooks_children.children and reason != "error":
            # Not "is this a training script?": its children may train (a model each builds itself), unseen.
            no_steps = "the script made no training step in its own process; it started %s (multiprocessing), " \
                       "which TuneBench does not follow" % _processes(hooks_children.children)
        elif reason != "error":
            self.ch.send("error", recoverable=False, message="the script ended without a training step (no "
                                                             "backward() of a model seen): is this a training script?")
            reason, code = "error", 1
            no_steps = "the script ended without a training step (no backward() seen)"
        else:
            no_steps = "stopped before the first training step" if reason == "stopped" else \
                "the script failed before its first training step"
        summary = {"steps": run.step_i, "reason": reason}
        if no_steps and not run.step_i:
            summary["no_steps"] = no_steps
        if hooks_children.training:
            summary["children"] = {"processes": hooks_children.training,
                                   "wall_ns": hooks_children.wall_ns(run.now_ns())}
        if self.outside_total["intervals"]:
            summary["outside"] = dict(self.outside_total)
        if self.tracer is not None:
            summary["profiler_ns"] = self.tracer.total_pause_ns
        loaders = loader_parts.finish()
        if loaders:
            summary["loader_parts"] = loaders
            # The training process's CPU time after its first step (all its threads, not its workers'): what the
            # loader verdict weighs the loading against on the machine's cores.
            if self.cpu0 is not None:
                summary["cpu_ns"] = time.process_time_ns() - self.cpu0
            # Loaded in this process only: what taking each batch from a worker would cost it, measured on its
            # own last batch (the verdict's worker count is predicted for a run that pays it). After the CPU
            # time above: the probe's is not the training's.
            main = [p for p in loaders if p.get("who") == "main"]
            if main and len(main) == len(loaders) and reason != "error":
                receive = loader_receive.measure(make=hooks_dataloader.unhooked)
                if receive:
                    main[0]["receive"] = receive
        loader_receive.forget()
        self.ch.send("done", summary=summary)
        sys.stdout.flush()
        sys.stderr.flush()
        if hard:
            hooks_dataloader.shutdown_all(run)
            os._exit(code)
        return code

    def send_hello(self):
        run = self.run
        for k in knobs.CATALOG:
            run.config.setdefault(k.id, k.current(run))
        self.ch.send("hello", versions={"tunebench": __version__, "python": platform.python_version(),
                                        "torch": torch.__version__, "cuda": torch.version.cuda or ""},
                     device=machine.device(), knobs=[k.describe(run) for k in knobs.CATALOG],
                     script=self.opts.script, python=sys.executable,
                     collector=machine.collector(bool(self.opts.trace_dir)))
        self.ch.send("started", model="script:" + self.opts.script, data=" ".join(self.opts.args),
                     script=self.opts.script, args=self.opts.args, config=dict(run.config), rev=run.rev)
        run.hello_sent = True

    def child_started(self, trains):
        """The script started a child process (hooks_children); one that was handed a model trains it: said once,
        when the others have had a moment to start too (Hogwild starts them in a loop)."""
        if trains and self.children_timer is None and not self.done:
            self.children_timer = threading.Timer(1.0, self.say_children)
            self.children_timer.daemon = True
            self.children_timer.start()

    def say_children(self):
        with self.children_lock:  # the timer's thread or the run's end, once; never after `done`
            n = hooks_children.training
            if self.children_said or self.done or not n:
                return
            self.children_said = True
            if self.run.step_i or self.run.hello_sent:
                msg = "%s (torch.multiprocessing) train too; TuneBench does not follow them: the steps measured " \
                      "are this process's only" % _processes(n)
            else:
                msg = "the training runs in %s (torch.multiprocessing); TuneBench measures this process only, " \
                      "which makes no training step (no steps, no throughput), and how long the children run" \
                      % _processes(n)
            self.ch.send("warning", message=msg, kind="children", processes=n)

    def oom_fields(self, e):
        """What an out-of-memory `error` adds: the memory when the failure reached us, read as a step's is
        (on CUDA its device_peak is the most allocated at once since the last step's end, the failed request
        not included), and the step whose message came last. {} for any other failure."""
        if not memory.is_out_of_memory(e):
            return {}
        try:
            mem = self.step_memory.read()
        except Exception:  # the error message itself must go out
            mem = {}
        return {"memory": mem, "after_step": self.run.step_i - 1 if self.run.step_i else None}

    def internal_error(self, e):
        """A bug of ours inside a hook: the script goes on untouched, without timing."""
        for h in _HOOKS:
            h.disable()
        self.run.warn_once("internal", "TuneBench's hooks failed and are off for the rest of the run (the script "
                                       "is unaffected): %s: %s" % (type(e).__name__, e),
                           traceback="".join(traceback.format_exception(type(e), e, e.__traceback__)))

    # --- the tracker's sink ------------------------------------------------------------------------------
    def span_opened(self, span):
        # At a step boundary the faults were just read for the step that ended: the same count starts this one.
        faults, self.boundary_faults = self.boundary_faults, None
        span.mark = (faults if faults is not None else minor_faults(), hooks_optimizer.scaler_marks())
        compile_events.reset()  # a compile before this span (start-up, validation) is no step's
        if self.tracer is not None:
            self.tracer.span_opened(span.serial)

    def training_began(self, span):
        # Before `hello` (which waits for the first step's end): the parent can tell a script whose first step
        # is long (LBFGS: 20 forward/backward passes in one step() call) from one that does not train.
        if not self.run.hello_sent:
            self.ch.send("training", t_ns=span.t0)

    def span_dropped(self, span):
        if self.tracer is not None:
            self.tracer.span_closed(span.serial, None)

    def step(self, i, span, end_ns):
        run = self.run
        if self.tracer is not None:
            self.tracer.range_ended(span.serial)  # the step's range is the step's: what follows here is ours
        if not run.hello_sent:
            # Model knobs asked at start apply now that the model is known (step 0 ran without them: it is
            # inside the warm-up anyway).
            for kid in _MODEL_KNOBS:
                if kid in run.requested:
                    try:
                        knobs.BY_ID[kid].apply(run, run.requested[kid], live=True)
                        run.config[kid] = run.requested[kid]
                    except knobs.KnobError as e:
                        self.ch.send("warning", message="%s=%s: %s" % (kid, run.requested[kid], e))
            self.send_hello()
        if self.cpu0 is None:  # the first step's end: the CPU time from here on is the training's (not imports)
            self.cpu0 = time.process_time_ns()
            loader_parts.first_step_ended()
        faults0, scalers0 = span.mark
        # TuneBench's trace pauses since the last step: between the two steps, in neither one's wall_ns.
        profiler_ns = self.tracer.take_pause_ns() if self.tracer is not None else 0
        compile_ns = compile_events.take_ns()  # torch.compile's top-level ranges that ended in this step
        faults = minor_faults()
        mem = self.step_memory.read()
        skipped = span.optimizer_steps == 0 and hooks_optimizer.scaler_updated(scalers0)
        update = "optimizer" if span.optimizer_steps else "hand-written" if span.updates else "none"
        self.ch.send_line(step_line(i=i, samples=span.samples, wall_ns=end_ns - span.t0,
                                    data_wait_ns=span.data_wait_ns, minor_faults=faults - faults0,
                                    config_rev=run.rev, skipped=skipped, t_ns=span.t0, forward_ns=span.forward_ns,
                                    backward_ns=span.backward_ns, optim_ns=span.optim_ns,
                                    optimizer_steps=span.optimizer_steps, update=update, unit=span.unit,
                                    tokens=span.tokens, profiler_ns=profiler_ns, compile_ns=compile_ns,
                                    loader_pass=span.loader_pass, loader_len=span.loader_len,
                                    traced=self.tracer is not None and self.tracer.recording(),
                                    memory_json=memory.to_json(mem), evaluations=span.evaluations()))
        self.boundary_faults = faults
        run.step_i = i + 1
        if self.tracer is not None:
            # The run's last step (--steps reached, or the run is ending): no new trace session after it.
            last = self.done or bool(run.steps_limit and run.step_i >= run.steps_limit)
            self.tracer.span_closed(span.serial, i, last, (end_ns, mem), end_ns - span.t0)
        if self.pending or not self.inbox.q.empty():
            for msg in self.pending + self.inbox.drain():
                self.handle(msg)
            self.pending = []
        if self.quota_cannot_wait():
            self.start_tracing(run.step_i)
        if self.tracer is not None and self.tracer.pause_ns:
            self.boundary_faults = None  # the profiler's page faults are not the next step's
        if run.steps_limit and run.step_i >= run.steps_limit:
            self.finish("steps", 0, hard=True)

    def update_window(self, serial):
        if serial:
            hooks_update.open_window(serial)
        else:
            hooks_update.close_window()

    def poll(self):
        # Outside the iterations only a stop is acted on at once; anything else (a loader knob would re-create
        # the validation's iterator) waits for the next step boundary.
        if self.inbox.q.empty():
            return
        for msg in self.inbox.drain():
            if msg.get("type") == "stop":
                self.finish("stopped", 0, hard=True)
            self.pending.append(msg)

    def outside(self, o, end_ns, until):
        ev, ck, other = o.parts(end_ns)
        parts = {"evaluation": ev, "checkpoint": ck, "other": other}
        kind = max(("evaluation", "checkpoint", "other"), key=lambda k: parts[k])
        self.ch.send("outside", after_step=o.after_step, t_ns=o.t0, wall_ns=max(0, end_ns - o.t0), kind=kind,
                     evaluation_ns=ev, checkpoint_ns=ck, other_ns=other, epoch=o.epoch, until=until)
        tot = self.outside_total
        tot["evaluation_ns"] += ev
        tot["checkpoint_ns"] += ck
        tot["other_ns"] += other
        tot["intervals"] += 1

    def handle(self, msg):
        t = msg.get("type")
        run = self.run
        if t == "stop":
            self.finish("stopped", 0, hard=True)
        elif t == "set":
            kid = str(msg.get("knob", ""))
            raw = msg.get("value")
            if isinstance(raw, bool):
                raw = "on" if raw else "off"
            try:
                knob = knobs.lookup(kid)
                value = knob.normalize(raw)
                pending, note = knob.apply(run, value, live=True)
            except knobs.KnobError as e:
                self.ch.send("error", recoverable=True, message="%s=%s: %s" % (kid, raw, e))
                return
            run.config[kid] = value
            run.requested[kid] = value
            run.rev += 1
            self.ch.send("config_applied", rev=run.rev, knobs=dict(run.config), changed={kid: value},
                         pending=[kid] if pending else [], note=note)
        elif t == "trace":
            if not self.opts.trace_dir:
                self.ch.send("error", recoverable=True, message="tracing needs --trace-dir")
            elif msg.get("action") == "start":
                self.start_tracing(run.step_i)
            elif msg.get("action") == "stop" and self.tracer is not None:
                self.tracer.stop()

    # --- tracing -----------------------------------------------------------------------------------------
    def start_tracing(self, at_step):
        """Traces from step `at_step` on: the run's start, a `trace start`, or a quota that cannot wait longer."""
        if self.tracer is None:
            o = self.opts
            self.tracer = Tracer(self.run, o.trace_dir, o.trace_every, o.trace_detail, o.trace_share, o.trace_steps)
        self.tracer.start(at_step)

    def quota_cannot_wait(self):
        """--trace-wait on a run of --steps N with a quota, not traced yet, and the steps left no more than the
        quota asks: the trace starts now, `trace start` or not. The parent's start comes after its reference steps
        (run --script: 10 measured ones, after a warm-up of up to half the run), and reaches the script a step or
        more after it is sent: a 60-step run whose warm-up took 30 held 19 traced steps of its 20."""
        o, run = self.opts, self.run
        return (self.tracer is None and bool(o.trace_dir) and o.trace_wait and o.trace_steps > 0
                and run.steps_limit > 0 and 0 < run.steps_limit - run.step_i <= o.trace_steps)

    # --- main --------------------------------------------------------------------------------------------
    def install(self):
        run, tr, err = self.run, self.tracker, self.internal_error
        hooks_dataloader.install(run, tr, err)
        hooks_optimizer.install(run, tr, err)
        hooks_forward.install(run, tr, err)
        hooks_save.install(tr, err)
        hooks_update.install(run, tr, err)
        hooks_children.install(self.child_started)
        # What torch.compile did: a `compile` message per compile, and each step's compile_ns. A failure of
        # ours turns only that off (the steps' timing is not its).
        compile_events.install(run, lambda e: run.warn_once(
            "compile_events", "TuneBench's reading of torch.compile's events failed and is off for the rest of "
                              "the run: %s: %s" % (type(e).__name__, e), kind="internal"))
        if self.opts.trace_dir:
            # A traced compile's kernels as ranges (a CPU's C++ kernels have none otherwise) and with the user's
            # lines: fixed when Inductor generates their code, so for the whole run (its cost: docs/analysis.md).
            compile_kernels.enable_for_trace()

        def in_child():  # a forked DataLoader worker inherits the hooks and our fds: it reports nothing
            self.ch.closed = True
            for h in _HOOKS:
                h.disable()

        os.register_at_fork(after_in_child=in_child)

    def main(self):
        opts, run = self.opts, self.run
        try:
            for kid, value in knobs.parse_set(opts.set):
                run.requested[kid] = value
                run.config[kid] = value
                if kid not in _MODEL_KNOBS:
                    knobs.BY_ID[kid].apply(run, value, live=False)
        except knobs.KnobError as e:
            sys.stderr.write("tunebench.launch: error: %s\n" % e)
            self.ch.send("error", recoverable=False, message=str(e))
            sys.stderr.flush()
            os._exit(2)
        if not os.path.isfile(opts.script):
            self.ch.send("error", recoverable=False, message="script not found: %s" % opts.script)
            self.ch.send("done", summary={"steps": 0, "reason": "error"})
            os._exit(1)
        try:
            patched.install(opts.source)
        except OSError as e:
            self.ch.send("error", recoverable=False, message=str(e))
            self.ch.send("done", summary={"steps": 0, "reason": "error"})
            os._exit(2)
        self.install()
        # Why the loader is slow: its parts, timed while the script is traced (TUNEBENCH_LOADER_PARTS=off: not).
        # Short samples are timed one in K (hooks/loader_parts.py): `bench/bench_loader_parts.py --micro` measured
        # +0.3% to +1.5% on a 0.28 ms sample (timing every sample: +5.9% to +8.9%).
        if opts.trace_dir and os.environ.get("TUNEBENCH_LOADER_PARTS", "on") != "off":
            loader_parts.enable(tempfile.mkdtemp(prefix="tunebench-loader-"), opts.script)
        if opts.trace_dir and not opts.trace_wait:
            self.start_tracing(0)
        watchdog = Watchdog(self.tracker, lambda msg, **f: self.ch.send("warning", message=msg, kind="stalled", **f),
                            opts.stall_warn, quiet=lambda: hooks_children.training and not self.tracker.steps)
        watchdog.start()
        sys.argv = [opts.script] + list(opts.args)
        # As `python train.py` has it: the script's directory first, and not the working directory that
        # `python -m` put there (a module beside the caller must not shadow or satisfy the script's imports).
        script_dir = os.path.dirname(os.path.abspath(opts.script))
        if sys.path and sys.path[0] in ("", os.getcwd()):
            sys.path[0] = script_dir
        else:
            sys.path.insert(0, script_dir)
        try:
            runpy.run_path(opts.script, run_name="__main__")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            watchdog.stop.set()
            failure = script_errors.exit_line(e, opts.script)
            if failure:  # the script's own line, which a library's log line on stderr may follow
                self.ch.send("error", recoverable=False, message=failure)
            if self.finish("completed" if code == 0 else "error", code) != code:
                sys.exit(1)  # no training step: the launcher's own failure
            raise  # Python prints a non-integer code and exits as it would have
        except BaseException as e:  # the script's own failure: its traceback, the steps so far kept
            watchdog.stop.set()
            tb = script_errors.script_traceback(e.__traceback__, opts.script)
            self.ch.send("error", recoverable=False, message=script_errors.one_line(e),
                         traceback="".join(traceback.format_exception(type(e), e, tb)), **self.oom_fields(e))
            self.finish("error", 1)
            sys.excepthook(type(e), e.with_traceback(tb), tb)
            sys.stderr.flush()
            if isinstance(e, KeyboardInterrupt):  # as Python does: end by the signal itself
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGINT)
            sys.exit(1)
        watchdog.stop.set()
        code = self.finish("completed", 0)
        if code:
            sys.exit(code)


def main(argv=None):
    opts = _parse(sys.argv[1:] if argv is None else argv)
    Launcher(opts).main()


if __name__ == "__main__":
    main()
