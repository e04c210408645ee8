"""The script's model, found from outside: the top-level modules whose parameters the optimizer updates.
Model knobs act on them through forward hooks (autocast, channels_last inputs) and module methods, so the
script's own code is untouched and every change can be undone."""

import gc
import warnings
import weakref

import torch

from . import hooks_forward
from .knob_errors import KnobError

_hooks = {}  # knob id -> [hook handles]
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


def _remove(knob_id):
    for h in _hooks.pop(knob_id, []):
        h.remove()


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


def _eager(hook):
    """The hook as Python runs it, never traced by torch.compile: a compiled module (compile=on, or the
    script's own torch.compile) would trace the autocast's __enter__ in one hook and run its __exit__ in the
    other on an object whose state was never set ("'autocast' object has no attribute 'prev'"). Run eagerly,
    the hooks switch autocast on around the compiled forward, which is traced under it."""
    disable = getattr(getattr(torch, "_dynamo", None), "disable", None)
    return disable(hook) if disable is not None else hook


def set_amp(run, value):
    models = find_models(run)
    if not models:
        run.requested["amp"] = value
        return True, "applies at the first step (the model is found then)"
    _remove("amp")
    if value == "off":
        return False, ""
    handles = []
    for m in models:
        dev = _device_type(m)
        stack = []

        def pre(mod, inputs, dev=dev, stack=stack):
            ctx = torch.autocast(device_type=dev, dtype=torch.bfloat16)
            ctx.__enter__()
            stack.append(ctx)

        def post(mod, inputs, output, stack=stack):
            if stack:
                stack.pop().__exit__(None, None, None)
            return _float_outputs(output)  # the loss outside the forward stays in fp32

        handles.append(m.register_forward_pre_hook(_eager(pre)))
        handles.append(m.register_forward_hook(_eager(post)))
    _hooks["amp"] = handles
    return False, "autocast bf16 around the forward of %s" % ", ".join(type(m).__name__ for m in models)


def set_channels_last(run, on):
    models = find_models(run)
    if not models:
        run.requested["channels_last"] = "on" if on else "off"
        return True, "applies at the first step (the model is found then)"
    _remove("channels_last")
    fmt = torch.channels_last if on else torch.contiguous_format
    for m in models:
        m.to(memory_format=fmt)
    if on:
        def pre(mod, inputs):
            return tuple(x.contiguous(memory_format=torch.channels_last)
                         if isinstance(x, torch.Tensor) and x.dim() == 4 else x for x in inputs)

        _hooks["channels_last"] = [m.register_forward_pre_hook(pre) for m in models]
    # The optimizer's state follows its parameters' layout.
    for opt in list(run.optimizers):
        for st in opt.state.values():
            for k, t in list(st.items()):
                if isinstance(t, torch.Tensor) and t.dim() == 4:
                    st[k] = t.contiguous(memory_format=fmt)
    return False, ""


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
                continue
            m.compile()
            # The compiled call holds the module's hooks, ours included: time it from outside.
            if getattr(m, "_compiled_call_impl", None) is not None:
                m._compiled_call_impl = hooks_forward.timed_call(m, m._compiled_call_impl)
                _compiled[m] = m._compiled_call_impl
        elif m in _compiled:
            # Module.compile() only sets the call __call__ takes; without it the module runs eagerly again
            # (the tuner measures compile=on against off in one process, and must be able to go back).
            m._compiled_call_impl = None
        elif getattr(m, "_compiled_call_impl", None) is not None:
            raise KnobError("the script compiled this model itself: compile=off would change its code")
    return False, ""
