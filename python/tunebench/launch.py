"""python -m tunebench.launch [--out-fd N] [--in-fd N] [--set k=v,...] [--steps N] [--trace-dir DIR]
                              [--trace-every N] SCRIPT [ARGS...]

Runs SCRIPT unmodified as __main__ under TuneBench's hooks and speaks the run protocol (docs/protocol.md)
on --out-fd (default 1) and --in-fd. `hello` goes out at the first optimizer step, when the script's
DataLoader and optimizer exist and the knobs have their real values. Exit codes: 0 (the script ended, the
--steps limit, a `stop`), 1 (the script failed), 2 (bad options or knobs).
"""

import argparse
import os
import platform
import runpy
import sys
import traceback

import torch

from . import __version__, hooks_dataloader, hooks_model, hooks_optimizer, knobs
from .protocol import Channel, Inbox
from .state import Run, minor_faults
from .tracing import Tracer

_MODEL_KNOBS = ("amp", "channels_last", "compile")


def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m tunebench.launch", add_help=True)
    p.add_argument("--out-fd", type=int, default=1)
    p.add_argument("--in-fd", type=int, default=None)
    p.add_argument("--set", default="")
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--trace-dir", default="")
    p.add_argument("--trace-every", type=int, default=20)
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    return p.parse_args(argv)


def _device():
    if torch.cuda.is_available():
        return {"kind": "cuda", "name": torch.cuda.get_device_name(0), "cores": os.cpu_count() or 1,
                "sm": torch.cuda.get_device_capability(0)[0]}
    name = platform.processor() or "cpu"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"kind": "cpu", "name": name, "cores": os.cpu_count() or 1}


def _collector(tracing):
    """What records the GPU: torch.profiler's CUDA activity, only with a CUDA device and a trace directory
    (the GUI's status bar shows it as the GPU collector; CPU ops are traced either way with a directory)."""
    if not tracing:
        return {"enabled": False, "reason": "not tracing (no --trace-dir)"}
    if not torch.cuda.is_available():
        return {"enabled": False, "reason": "no CUDA device: torch.profiler records CPU ops only"}
    return {"enabled": True, "reason": "", "kind": "torch.profiler (CUDA activity)"}


class Launcher:
    def __init__(self, opts):
        self.opts = opts
        self.ch = Channel(opts.out_fd)
        self.inbox = Inbox(opts.in_fd, lambda line: self.ch.send("error", recoverable=True,
                                                                  message="malformed message: " + line[:120]))
        self.run = Run(self.ch, self.inbox, opts.steps)
        self.tracer = None

    # --- lifecycle ---------------------------------------------------------------------------------------
    def finish(self, reason, code):
        run = self.run
        if self.tracer is not None:
            self.tracer.stop(run.step_i - 1)
        hooks_dataloader.shutdown_all(run)
        if not run.hello_sent and reason != "error":
            self.ch.send("error", recoverable=False, message="the script ended without an optimizer step: is this a "
                                                             "training script (torch.optim.Optimizer.step)?")
            reason, code = "error", 1
        self.ch.send("done", summary={"steps": run.step_i, "reason": reason})
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    def send_hello(self):
        run = self.run
        for k in knobs.CATALOG:
            run.config.setdefault(k.id, k.current(run))
        self.ch.send("hello", versions={"tunebench": __version__, "python": platform.python_version(),
                                        "torch": torch.__version__},
                     device=_device(), knobs=[k.describe(run) for k in knobs.CATALOG],
                     script=self.opts.script, python=sys.executable,
                     collector=_collector(bool(self.opts.trace_dir)))
        self.ch.send("started", model="script:" + self.opts.script, data=" ".join(self.opts.args),
                     script=self.opts.script, args=self.opts.args, config=dict(run.config), rev=run.rev)
        run.hello_sent = True

    # --- the step hook -----------------------------------------------------------------------------------
    def on_step(self, opt, skipped=False):
        run = self.run
        now = run.now_ns()
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
        start = run.t_prev_ns if run.t_prev_ns is not None else now
        faults = minor_faults()
        self.ch.send("step", i=run.step_i, samples=run.samples, wall_ns=now - start, data_wait_ns=run.data_wait_ns,
                     h2d_ns=0, minor_faults=faults - run.faults0, loss=None, config_rev=run.rev, warmup=False,
                     skipped=skipped, t_ns=start)
        run.faults0 = faults
        run.samples = 0
        run.data_wait_ns = 0
        if self.tracer is not None:
            self.tracer.on_step(run.step_i)
        run.step_i += 1
        for msg in self.inbox.drain():
            self.handle(msg)
        if run.steps_limit and run.step_i >= run.steps_limit:
            self.finish("steps", 0)
        # The hook's own time (messages, trace chunks) belongs to no step.
        run.t_prev_ns = run.now_ns()

    def handle(self, msg):
        t = msg.get("type")
        run = self.run
        if t == "stop":
            self.finish("stopped", 0)
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
                if self.tracer is None:
                    self.tracer = Tracer(run, self.opts.trace_dir, self.opts.trace_every)
                self.tracer.start(run.step_i)
            elif msg.get("action") == "stop" and self.tracer is not None:
                self.tracer.stop(run.step_i - 1)

    # --- main --------------------------------------------------------------------------------------------
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
        hooks_dataloader.install(run)
        hooks_optimizer.install(run, self.on_step)
        if opts.trace_dir:
            self.tracer = Tracer(run, opts.trace_dir, opts.trace_every)
            self.tracer.start(0)
        sys.argv = [opts.script] + list(opts.args)
        sys.path.insert(0, os.path.dirname(os.path.abspath(opts.script)))
        try:
            runpy.run_path(opts.script, run_name="__main__")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            self.finish("completed" if code == 0 else "error", code)
        except BaseException as e:  # the script's own failure: its traceback, the steps so far kept
            tb = traceback.format_exc()
            last = "".join(traceback.format_exception_only(type(e), e)).strip().splitlines()
            self.ch.send("error", recoverable=False, message=last[-1] if last else type(e).__name__, traceback=tb)
            sys.stderr.write(tb)
            self.finish("error", 1)
        self.finish("completed", 0)


def main(argv=None):
    opts = _parse(sys.argv[1:] if argv is None else argv)
    Launcher(opts).main()


if __name__ == "__main__":
    main()
