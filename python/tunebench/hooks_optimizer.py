"""Optimizer hooks: one `Optimizer.step()` is one training step, and `zero_grad` follows the zero_grad_none
knob. A GradScaler's step calls the optimizer's; when it does not (fp16 gradients with inf/nan: the scaler
skips the update and lowers its scale), that iteration is still a step, recorded as skipped, so its samples
and time do not join the next step. Also the anomaly-detection switch, which a script may turn on itself:
with the knob set to off, the script's own call is overridden (and said once)."""

import torch

from . import source

_orig_opt_init = torch.optim.Optimizer.__init__
_orig_set_anomaly = torch.set_anomaly_enabled
# The base GradScaler class: torch.amp's (torch >= 2.3; torch.cuda.amp's and torch.cpu.amp's derive from
# it), else torch.cuda.amp's. Its __init__ wraps each scaler's step.
_scaler_class = getattr(torch.amp, "GradScaler", None) or torch.cuda.amp.GradScaler
_orig_scaler_init = _scaler_class.__init__
_run = None
_on_step = None
_optimizer_steps = 0  # Optimizer.step calls so far: a scaler's step that leaves it unchanged skipped the update


def real_set_detect_anomaly(on):
    _orig_set_anomaly(bool(on))


def _patched_set_anomaly(mode, *args, **kwargs):
    run = _run
    if run is not None and mode and run.requested.get("anomaly_detection") == "off":
        run.warn_once("anomaly", "the script turns autograd anomaly detection on; anomaly_detection=off keeps it off")
        return _orig_set_anomaly(False, *args, **kwargs)
    return _orig_set_anomaly(mode, *args, **kwargs)


def _wrap_instance(opt):
    step = opt.step
    zero_grad = opt.zero_grad

    def tb_step(*args, **kwargs):
        global _optimizer_steps
        out = step(*args, **kwargs)
        _optimizer_steps += 1
        if _on_step is not None:
            _on_step(opt)
        return out

    def tb_zero_grad(*args, **kwargs):
        run = _run
        if run is not None and "zero_grad_none" in run.requested:
            kwargs.pop("set_to_none", None)
            if args:
                args = ()
            return zero_grad(set_to_none=run.requested["zero_grad_none"] == "on")
        return zero_grad(*args, **kwargs)

    opt.step = tb_step
    opt.zero_grad = tb_zero_grad


def _patched_opt_init(self, *args, **kwargs):
    _orig_opt_init(self, *args, **kwargs)
    run = _run
    if run is None:
        return
    _wrap_instance(self)
    run.optimizers.add(self)
    site = source.caller_site()
    run.ch.send("source", kind="optimizer", file=site["file"], line=site["line"], code=site["code"],
                **{"class": type(self).__name__})


def _patched_scaler_init(self, *args, **kwargs):
    _orig_scaler_init(self, *args, **kwargs)
    if _run is None:
        return
    # The instance's own step, whatever class it is (a subclass's override included).
    step = self.step

    def tb_scaler_step(optimizer, *a, **kw):
        before = _optimizer_steps
        out = step(optimizer, *a, **kw)
        if _optimizer_steps == before and _on_step is not None:
            _on_step(optimizer, skipped=True)
        return out

    self.step = tb_scaler_step


def install(run, on_step):
    """`on_step(optimizer, skipped=False)` is called after every training step."""
    global _run, _on_step
    _run, _on_step = run, on_step
    torch.optim.Optimizer.__init__ = _patched_opt_init
    _scaler_class.__init__ = _patched_scaler_init
    torch.set_anomaly_enabled = _patched_set_anomaly


def uninstall():
    global _run, _on_step
    _run = _on_step = None
    torch.optim.Optimizer.__init__ = _orig_opt_init
    _scaler_class.__init__ = _orig_scaler_init
    torch.set_anomaly_enabled = _orig_set_anomaly
