"""The script's model, found from outside: the top-level modules whose parameters the optimizer updates.
Model knobs act on them through forward hooks (autocast, channels_last inputs) and module methods, so the
script's own code is untouched and every change can be undone.

Nothing of ours is left on the script's modules, because what is on a module goes wherever the module goes:
torch.save(model), pickle and copy.deepcopy copy its hook dicts (a local function does not pickle; a
module-level one would make the saved file need tunebench to load), and torch.jit.script compiles its hooks.
So the knobs' hooks are torch's global module forward hooks (one pair, registered only while a model knob is
on), which act on the modules a knob was applied to, found by identity (id: a script's module class may be
unhashable). A module compiled in place (Module.compile: the compile knob, or the script's own
model.compile()) runs every hook inside its compiled graph, where ours do nothing (no graph break, as the
timing hooks): its compiled call is wrapped instead - the one attribute Module.__getstate__ leaves out of
every copy, pickle and save."""

import gc
import os
import warnings
import weakref

import torch

from . import forward as hooks_forward
from ..knob_errors import KnobError

_compiling = hooks_forward._compiling  # inside torch.compile's tracing: the hooks return None at once
_targets = {}   # id(module) -> _Target: the modules a model knob is on for
_handles = []   # the global hooks, while _targets is not empty
_compiled = weakref.WeakKeyDictionary()  # module -> the compiled call compile=on gave it


def find_models(run):
    """Top-level nn.Modules holding the optimizers' parameters (found once, by a scan of live objects)."""
    if run.models:
        return run.models
    params = set()
    for opt in list(run.optimizers):
        for group in opt.param_groups:
            params.update(id(p) for p in group["params"])
    if not params:
        # No optimizer (a hand-written update): the modules whose forward ran with grad enabled.
        trained = list(run.trained_modules)
        run.models = [m for m in trained if not any(m is not o and any(c is m for c in o.modules())
                                                     for o in trained)]
        return run.models
    holders = []
    with warnings.catch_warnings():  # touching deprecated torch objects warns: not the script's output
        warnings.simplefilter("ignore")
        for obj in gc.get_objects():
            try:
                if isinstance(obj, torch.nn.Module) and any(id(p) in params for p in obj.parameters()):
                    holders.append(obj)
            except Exception:
                continue
    children = set()
    for m in holders:
        for c in m.modules():
            if c is not m:
                children.add(id(c))
    run.models = [m for m in holders if id(m) not in children]
    return run.models


def _device_type(model):
    for p in model.parameters():
        return p.device.type
    return "cpu"


def _float_outputs(out):
    if isinstance(out, torch.Tensor):
        return out.float() if out.is_floating_point() else out
    if isinstance(out, tuple):
        return tuple(_float_outputs(o) for o in out)
    if isinstance(out, list):
        return [_float_outputs(o) for o in out]
    if isinstance(out, dict):
        return {k: _float_outputs(v) for k, v in out.items()}
    return out


class _Target:
    """What the model knobs do around one module's forward. `autocasts` has one entry per forward that entered
    (its autocast, or None without amp), popped by the same call's exit: a knob set between the two (a step
    boundary is seen inside the timing pre-hook, which runs before ours) can never unbalance them."""

    __slots__ = ("ref", "amp", "channels_last", "autocasts")

    def __init__(self, module):
        self.ref = weakref.ref(module)
        self.amp = None             # the device type autocast runs on, None: amp off
        self.channels_last = False  # 4-D inputs made channels_last
        self.autocasts = []

    def active(self):
        return self.amp is not None or self.channels_last

    def enter(self, args):
        """The pre-hook: autocast on; the inputs to use instead (None: unchanged)."""
        ctx = None
        if self.amp is not None:
            ctx = torch.autocast(device_type=self.amp, dtype=torch.bfloat16)
            ctx.__enter__()
        self.autocasts.append(ctx)
        if self.channels_last and any(isinstance(x, torch.Tensor) and x.dim() == 4 for x in args):
            return tuple(x.contiguous(memory_format=torch.channels_last)
                         if isinstance(x, torch.Tensor) and x.dim() == 4 else x for x in args)
        return None

    def exit(self, out):
        """The post-hook: autocast off; the output to use instead (None: unchanged)."""
        ctx = self.autocasts.pop() if self.autocasts else None
        if ctx is None:
            return None
        ctx.__exit__(None, None, None)
        return _float_outputs(out)  # the loss outside the forward stays in fp32


def _target_of(module):
    t = _targets.get(id(module))
    return t if t is not None and t.ref() is module else None


def _pre_hook(module, args):
    if _compiling():
        return None
    t = _target_of(module)
    return t.enter(args) if t is not None else None


def _post_hook(module, args, out):
    if _compiling():
        return None
    t = _target_of(module)
    return t.exit(out) if t is not None else None


class _CompiledCall:
    """A module compiled in place, its knobs applied around its compiled call (as the global hooks do around
    an eager forward). Module.__getstate__ drops the compiled call: no copy of the module holds this."""

    __slots__ = ("target", "call")

    def __init__(self, target, call):
        self.target, self.call = target, call

    def __call__(self, *args, **kwargs):
        t = self.target
        new = t.enter(args)
        if new is not None:
            args = new
        out = None
        try:
            out = self.call(*args, **kwargs)
        finally:
            replaced = t.exit(out)  # autocast off when the forward raises, too
        return out if replaced is None else replaced


def _sync_compiled_call(m, t):
    """A compiled module's call wrapped while a model knob is on for it, and given back when none is. Done when
    a knob or compile=on is set: a script that calls model.compile() itself only after the knobs applied (its
    first step) runs its compiled forward without them."""
    call = getattr(m, "_compiled_call_impl", None)
    if call is None:
        return
    if isinstance(call, _CompiledCall):
        if t is None or not t.active():
            m._compiled_call_impl = call.call
        return
    if t is not None and t.active():
        m._compiled_call_impl = _CompiledCall(t, call)


def _configure(m, **fields):
    """Sets a model knob's part of the module's _Target; one with no knob on is forgotten, and the global hooks
    go when no module needs them."""
    t = _target_of(m)
    if t is None:
        t = _Target(m)
    for k, v in fields.items():
        setattr(t, k, v)
    if t.active():
        _targets[id(m)] = t
        if not _handles:
            mm = torch.nn.modules.module
            _handles.append(mm.register_module_forward_pre_hook(_pre_hook))
            try:  # always_call: autocast is switched off when a forward raises
                _handles.append(mm.register_module_forward_hook(_post_hook, always_call=True))
            except TypeError:  # torch < 2.1
                _handles.append(mm.register_module_forward_hook(_post_hook))
    else:
        _targets.pop(id(m), None)
        if not _targets:
            for h in _handles:
                h.remove()
            _handles.clear()
    _sync_compiled_call(m, t)


def _set_knob(field, models, value):
    """The knob's field set to value(m) on each model found, and off (value(None)) on any other module it was
    on for; a module already set is left as it is (no churn of the global hooks at a step boundary)."""
    found = {id(m) for m in models}
    for t in list(_targets.values()):
        m = t.ref()
        if m is not None and id(m) not in found:
            _configure(m, **{field: value(None)})
    for m in models:
        _configure(m, **{field: value(m)})


def set_amp(run, value):
    models = find_models(run)
    if not models:
        run.requested["amp"] = value
        return True, "applies at the first step (the model is found then)"
    on = value != "off"
    _set_knob("amp", models, lambda m: _device_type(m) if on and m is not None else None)
    if not on:
        return False, ""
    return False, "autocast bf16 around the forward of %s" % ", ".join(type(m).__name__ for m in models)


def set_channels_last(run, on):
    models = find_models(run)
    if not models:
        run.requested["channels_last"] = "on" if on else "off"
        return True, "applies at the first step (the model is found then)"
    fmt = torch.channels_last if on else torch.contiguous_format
    for m in models:
        m.to(memory_format=fmt)
    _set_knob("channels_last", models, lambda m: on and m is not None)
    # The optimizer's state follows its parameters' layout.
    for opt in list(run.optimizers):
        for st in opt.state.values():
            for k, t in list(st.items()):
                if isinstance(t, torch.Tensor) and t.dim() == 4:
                    st[k] = t.contiguous(memory_format=fmt)
    return False, ""


def _uncompile(m):
    """The module's eager call back, nothing of ours left in its __dict__ (the class's None shows through)."""
    if getattr(torch.nn.Module, "_compiled_call_impl", 0) is None:
        m.__dict__.pop("_compiled_call_impl", None)
    else:
        m._compiled_call_impl = None


# The name of the frame compile=on compiles (the compile lane names it after the model: compile_events.py).
MODEL_CALL = "_tunebench_model_call"


def compile_backend():
    """The backend the compile knob compiles with: TUNEBENCH_COMPILE_BACKEND, else torch.compile's own default
    (inductor). aot_eager traces the same frames and graphs without Inductor's code generation, which a cold cache
    pays in tens of seconds: the tests of what the knob does use it."""
    return os.environ.get("TUNEBENCH_COMPILE_BACKEND") or "inductor"


def _model_call(m):
    """The module's whole call (its hooks, ours included, and its forward) as a frame of ours for torch.compile.
    Module.compile() compiles the module's own _call_impl, a frame of torch's, which Dynamo does not compile as a
    top frame when the module's forward is torch's too: on an nn.Sequential, torch 2.11 compiled no graph at all
    and compile=on measured nothing. A frame of ours calling it is compiled, as torch.compile(module) does with a
    wrapper of its own."""
    def call(*args, **kwargs):
        return m._call_impl(*args, **kwargs)
    call.__code__ = call.__code__.replace(co_name=MODEL_CALL)
    call.__name__ = call.__qualname__ = MODEL_CALL
    return call


def set_compile(run, on):
    models = find_models(run)
    if not models:
        run.requested["compile"] = "on" if on else "off"
        return True, "applies at the first step (the model is found then)"
    for m in models:
        if not hasattr(m, "compile"):
            raise KnobError("this torch has no Module.compile (in-place compile, torch >= 2.2): a code change: "
                            "model = torch.compile(model)")
        if on:
            if getattr(m, "_compiled_call_impl", None) is not None:
                continue
            if m in _compiled:  # compiled before and switched off: TorchInductor's code is still cached
                m._compiled_call_impl = _compiled[m]
            else:
                m._compiled_call_impl = torch.compile(_model_call(m), backend=compile_backend())
                # The compiled call holds the module's hooks, ours included: time it from outside.
                if getattr(m, "_compiled_call_impl", None) is not None:
                    m._compiled_call_impl = hooks_forward.timed_call(m, m._compiled_call_impl)
                    _compiled[m] = m._compiled_call_impl
            _sync_compiled_call(m, _target_of(m))  # amp / channels_last around the compiled call
        elif m in _compiled:
            # Module.compile() only sets the call __call__ takes; without it the module runs eagerly again
            # (the tuner measures compile=on against off in one process, and must be able to go back).
            _uncompile(m)
        elif getattr(m, "_compiled_call_impl", None) is not None:
            raise KnobError("the script compiled this model itself: compile=off would change its code")
    return False, ""


def reset():
    """Every model knob off on every module it is on for: nothing of ours left registered (a test's cleanup;
    the launcher's own process ends with its script)."""
    for t in list(_targets.values()):
        m = t.ref()
        if m is not None:
            _configure(m, amp=None, channels_last=False)
    _targets.clear()
    for h in _handles:
        h.remove()
    _handles.clear()
