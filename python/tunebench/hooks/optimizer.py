"""Optimizer hooks: the time of each `Optimizer.step()` (torch's global step pre/post hooks, which run inside
every optimizer's step - a scheduler's, a GradScaler's or a closure's call included), where each optimizer
was made (the line a report points at), the zero_grad_none knob, the GradScalers (for steps whose update they
skipped), and the anomaly-detection switch.

Nothing on an optimizer instance is replaced: `opt.step` stays the bound method LR schedulers wrap, and
`opt.zero_grad` stays the class's. The knob zero_grad_none needs to change zero_grad's argument, so only
while that knob is set is the optimizer classes' own zero_grad wrapped (at class level: methods stay bound).

A GradScaler that finds inf/nan gradients skips the optimizer's step and lowers its scale in update(): an
iteration in which a scaler updated its scale (its `_scale` tensor changed, seen without reading it, so
without a device sync) and no optimizer stepped is reported as skipped.
"""

import functools
import time
import weakref

import torch
import importlib

from .. import source
from .reporter import Reporter

_orig_opt_init = torch.optim.Optimizer.__init__
_orig_set_anomaly = torch.set_anomaly_enabled
# The base GradScaler class: torch.amp's (torch >= 2.3; torch.cuda.amp's and torch.cpu.amp's derive from
# it), else torch.cuda.amp's.
_scaler_class = getattr(torch.amp, "GradScaler", None) or torch.cuda.amp.GradScaler
_orig_scaler_init = _scaler_class.__init__
_optim_mod = importlib.import_module("torch.optim.optimizer")  # torch.optim deletes the name
_HAS_GLOBAL_STEP_HOOKS = hasattr(_optim_mod, "register_optimizer_step_pre_hook")

_r = Reporter()  # the run, the tracker, on_error (reporter.py)
_handles = []
_scalers = weakref.WeakSet()
_zero_grad_wrapped = {}   # class -> its own zero_grad before we wrapped it
_step_wrapped = {}        # class -> its own step (torch < 2.0 only: no global step hooks there)


def real_set_detect_anomaly(on):
    _orig_set_anomaly(bool(on))


@functools.wraps(_orig_set_anomaly)
def _patched_set_anomaly(mode, *args, **kwargs):
    run = _r.run
    if run is not None and mode and run.requested.get("anomaly_detection") == "off":
        run.warn_once("anomaly", "the script turns autograd anomaly detection on; anomaly_detection=off keeps it off")
        return _orig_set_anomaly(False, *args, **kwargs)
    return _orig_set_anomaly(mode, *args, **kwargs)


# --- step timing -------------------------------------------------------------------------------------------

_fail = _r.fail


def _tell(event, opt, *more):
    """The tracker's optimizer_start / optimizer_end for `opt`, now; an internal error turns timing off."""
    tracker = _r.tracker
    if tracker is not None:
        try:
            getattr(tracker, event)(id(opt), time.monotonic_ns(), *more)
        except Exception as e:  # noqa: BLE001
            _fail(e)


def _has_closure(opt, args, kwargs):
    """Was step() given a closure (LBFGS: it runs the iteration's forwards and backwards)? The global hooks get
    the call's arguments with the optimizer first; the torch < 2.0 wrapper without it."""
    if callable(kwargs.get("closure")):
        return True
    return any(a is not opt and callable(a) for a in args[:2])


def _step_pre(opt, args, kwargs):
    _tell("optimizer_start", opt, _has_closure(opt, args, kwargs))


def _step_post(opt, args, kwargs):
    _tell("optimizer_end", opt)


def _wrap_step_class(cls):
    """torch < 2.0: the step pre/post hooks as a wrapper of the class's own step (the method stays bound)."""
    for klass in cls.__mro__:
        if "step" not in vars(klass) or klass in _step_wrapped or klass is object:
            continue
        orig = vars(klass)["step"]

        @functools.wraps(orig)
        def step(self, *args, __orig=orig, **kwargs):
            _step_pre(self, args, kwargs)
            out = __orig(self, *args, **kwargs)
            _step_post(self, args, kwargs)
            return out

        _step_wrapped[klass] = orig
        setattr(klass, "step", step)
        break  # the most derived step: a super().step() inside it is the same call


# --- zero_grad_none ----------------------------------------------------------------------------------------

def _wrap_zero_grad(cls):
    for klass in cls.__mro__:
        if "zero_grad" not in vars(klass) or klass in _zero_grad_wrapped:
            continue
        orig = vars(klass)["zero_grad"]

        @functools.wraps(orig)
        def zero_grad(self, *args, __orig=orig, **kwargs):
            run = _r.run
            if run is not None and "zero_grad_none" in run.requested:
                return __orig(self, set_to_none=run.requested["zero_grad_none"] == "on")
            return __orig(self, *args, **kwargs)

        _zero_grad_wrapped[klass] = orig
        setattr(klass, "zero_grad", zero_grad)


def apply_zero_grad_none(run):
    """The knob is set: every optimizer class in use (and the base, for later ones) follows it."""
    _wrap_zero_grad(torch.optim.Optimizer)
    for opt in list(run.optimizers):
        _wrap_zero_grad(type(opt))


# --- construction ------------------------------------------------------------------------------------------

@functools.wraps(_orig_opt_init)
def _patched_opt_init(self, *args, **kwargs):
    _orig_opt_init(self, *args, **kwargs)
    run = _r.run
    if run is None:
        return
    run.optimizers.add(self)
    if "zero_grad_none" in run.requested:
        _wrap_zero_grad(type(self))
    if not _HAS_GLOBAL_STEP_HOOKS:
        _wrap_step_class(type(self))
    site = source.caller_site()
    run.ch.send("source", kind="optimizer", file=site["file"], line=site["line"], code=site["code"],
                **{"class": type(self).__name__})


@functools.wraps(_orig_scaler_init)
def _patched_scaler_init(self, *args, **kwargs):
    _orig_scaler_init(self, *args, **kwargs)
    if _r.run is not None:
        _scalers.add(self)


def scaler_marks():
    """Each live GradScaler's scale tensor and its version: update() changes it in place, skipped or not."""
    out = {}
    if not _scalers:
        return out
    for s in list(_scalers):
        t = getattr(s, "_scale", None)
        if isinstance(t, torch.Tensor):
            out[id(s)] = (id(t), t._version)
    return out


def scaler_updated(before):
    """Did a scaler update its scale since `before` (scaler_marks())? A scale made since (GradScaler creates
    it at the first scale() call) counts only once an update changed it."""
    if not _scalers:
        return False
    for sid, (tid, version) in scaler_marks().items():
        prev = before.get(sid)
        if (prev is None and version > 0) or (prev is not None and prev != (tid, version)):
            return True
    return False


def install(run, tracker=None, on_error=None):
    _r.attach(run, tracker, on_error)
    torch.optim.Optimizer.__init__ = _patched_opt_init
    _scaler_class.__init__ = _patched_scaler_init
    torch.set_anomaly_enabled = _patched_set_anomaly
    if _HAS_GLOBAL_STEP_HOOKS:
        _handles.append(_optim_mod.register_optimizer_step_pre_hook(_step_pre))
        _handles.append(_optim_mod.register_optimizer_step_post_hook(_step_post))
    if "zero_grad_none" in run.requested:
        apply_zero_grad_none(run)


def disable():
    _r.disable()


def uninstall():
    _r.detach()
    torch.optim.Optimizer.__init__ = _orig_opt_init
    _scaler_class.__init__ = _orig_scaler_init
    torch.set_anomaly_enabled = _orig_set_anomaly
    for h in _handles:
        h.remove()
    _handles.clear()
    for klass, orig in list(_zero_grad_wrapped.items()) + list(_step_wrapped.items()):
        setattr(klass, orig.__name__, orig)
    _zero_grad_wrapped.clear()
    _step_wrapped.clear()
