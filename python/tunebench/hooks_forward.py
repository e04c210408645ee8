"""Forward and backward, seen through PyTorch's own hook points: the global module forward hooks
(torch.nn.modules.module.register_module_forward_pre_hook / register_module_forward_hook) and, for the
backward, a pre-hook on the autograd node of each training forward's output plus an engine callback at the
end of that backward. Nothing of the script's is replaced: its modules, tensors and methods stay what they
are, and the hooks return None (they never change an input or an output).

Only the outermost call of a module with trainable parameters counts (a loss module, a metric or a
transform has none); calls in other threads (DataParallel's replicas) and inside a backward (activation
checkpointing re-runs the forward there) are left out. During an iteration's first training forward, the
first sequence module it calls is read too: its input says the batch dimension (batch_dim.py). Inside
torch.compile's tracing the hooks do nothing, so they add no graph break; a compiled model's own call (the
OptimizedModule) runs outside the graph and is what is timed.
"""

import threading
import time
import weakref

import torch

from . import batch_dim
from .hooks_dataloader import batch_size_of

try:
    from torch.compiler import is_compiling as _compiling
except ImportError:  # torch < 2.3
    try:
        from torch._dynamo import is_compiling as _compiling
    except ImportError:
        def _compiling():
            return False

_graph_task_id = getattr(torch._C, "_current_graph_task_id", lambda: -1)
_engine = torch.autograd.Variable._execution_engine
_HAS_NODE_PREHOOK = hasattr(getattr(torch.autograd.graph, "Node", object), "register_prehook")

_tracker = None
_run = None
_thread = None
_depth = 0
_outer = None             # (module, record_function or None, grad enabled) of the outermost forward running
_handles = []
_trained = weakref.WeakSet()   # modules that ran a forward with grad enabled
_backward_open = False    # a backward's start was seen and its end callback is queued
_probe = None             # during an iteration's first training forward: [its input, first sequence module's batch]
annotate = False          # a trace is being recorded: mark each outermost forward with a `## forward ##` range
_on_error = None


def _fail(e):
    """The hooks never raise into the script: an internal error turns TuneBench's timing off, said once."""
    disable()
    if _on_error is not None:
        _on_error(e)


_trainable_cache = weakref.WeakKeyDictionary()  # module -> (steps when checked, has a trainable parameter)


def _trainable(module):
    """Has the module a parameter that requires grad? Scanning a big model's parameters at every call costs
    more than the rest of the hooks together, so the answer is kept for the rest of the step (a script that
    freezes or unfreezes layers does it between steps)."""
    steps = _tracker.steps
    hit = _trainable_cache.get(module)
    if hit is not None and hit[0] == steps:
        return hit[1]
    found = False
    for p in module.parameters():
        if p.requires_grad:
            found = True
            break
    _trainable_cache[module] = (steps, found)
    return found


def _backward_started():
    global _backward_open
    if _backward_open or _tracker is None:
        return
    _backward_open = True
    _tracker.backward_start(time.monotonic_ns())
    _engine.queue_callback(_backward_ended_hook)


def _backward_ended():
    global _backward_open
    if not _backward_open:
        return
    _backward_open = False
    if _tracker is not None:
        _tracker.backward_end(time.monotonic_ns())


def _backward_ended_hook():
    try:
        _backward_ended()
    except Exception as e:  # noqa: BLE001
        _fail(e)


def _node_prehook(grad_outputs):
    try:
        _backward_started()
    except Exception as e:  # noqa: BLE001
        _fail(e)
    return None


def _watch_backward(out):
    """Pre-hooks on the autograd nodes of a training forward's outputs: the first one the engine reaches
    starts that backward (the loss's own few nodes before it are not counted)."""
    if isinstance(out, torch.Tensor):
        fn = out.grad_fn
        if fn is not None:
            fn.register_prehook(_node_prehook)
    elif isinstance(out, (tuple, list)):
        for o in out[:8]:
            _watch_backward(o)
    elif isinstance(out, dict):
        for o in list(out.values())[:8]:
            _watch_backward(o)


def _enter(module, args):
    """The outermost call (depth already 1): a model's forward, if the module has trainable parameters."""
    global _outer, _probe
    if _graph_task_id() != -1:
        return  # a forward the backward runs (activation checkpointing)
    if _backward_open:
        _backward_ended()  # the last backward raised before its end callback ran
    if not _trainable(module):
        return
    t = time.monotonic_ns()
    grad = torch.is_grad_enabled()
    if grad:
        has_trained = True
        if module not in _trained:
            _trained.add(module)
            _run.note_model(module)
    else:
        has_trained = module in _trained
    # The batch size is needed only without a DataLoader: asked for then.
    if _tracker.forward_start(grad, has_trained, lambda: batch_size_of(args), t):
        _probe = [batch_dim.model_input(args), None]
    rf = None
    if annotate:
        rf = torch.autograd.profiler.record_function("## forward ##")
        rf.__enter__()
    _outer = (module, rf, grad)


def _exit(module, out):
    global _outer, _probe
    _, rf, grad = _outer
    _outer = None
    if rf is not None:
        rf.__exit__(None, None, None)
    _tracker.forward_end(time.monotonic_ns())
    if _probe is not None:
        probe, _probe = _probe, None
        _tell_batch(*probe)
    if grad and out is not None and _HAS_NODE_PREHOOK:
        _watch_backward(out)


def _tell_batch(inp, seq):
    samples, unit, tokens = batch_dim.decide(inp, seq, _tracker.loader_samples())
    if unit != "samples" or tokens is not None:
        _tracker.batch_told(samples, unit, tokens)
    if unit == "time steps":
        _run.warn_once("time-steps", "samples = time steps: the model's input begins with its sequence length "
                                     "and its batch dimension could not be told from its sequence modules",
                       kind="unit")


def _read_sequence_module(module, args):
    """An inner call during the probe: the first sequence module gives the batch it reads."""
    if isinstance(module, batch_dim.SEQUENCE_MODULES):
        found = batch_dim.sequence_batch(module, args)
        if found is not None:
            _probe[1] = found


# The registered hooks run for every module call, so their path for an inner module is kept to a few
# checks. The compile check comes first and alone: torch.compile's tracing sees a function that returns None
# at once (no graph break, nothing recorded inside the graph).
def _pre_hook(module, args):
    global _depth
    if _compiling():
        return None
    if _tracker is not None and threading.get_ident() == _thread:
        _depth += 1
        if _depth == 1:
            try:
                _enter(module, args)
            except Exception as e:  # noqa: BLE001
                _fail(e)
        elif _probe is not None and _probe[1] is None:
            try:
                _read_sequence_module(module, args)
            except Exception as e:  # noqa: BLE001
                _fail(e)
    return None


def _post_hook(module, args, out):
    global _depth
    if _compiling():
        return None
    if _tracker is not None and threading.get_ident() == _thread and _depth:
        _depth -= 1
        if _depth == 0 and _outer is not None and _outer[0] is module:
            try:
                _exit(module, out)
            except Exception as e:  # noqa: BLE001
                _fail(e)
    return None


def timed_call(module, call):
    """Module.compile() (the `compile` knob) puts the whole call, hooks included, inside the compiled graph,
    where the hooks do nothing: the call is timed from outside it instead."""
    def timed(*args, **kwargs):
        _pre_hook(module, args)
        out = None
        try:
            out = call(*args, **kwargs)
            return out
        finally:
            _post_hook(module, args, out)
    return timed


def _fallback_backward_wrappers():
    """torch < 2.0 has no autograd node pre-hooks: time torch.autograd.backward / grad themselves."""
    import functools
    orig_backward, orig_grad = torch.autograd.backward, torch.autograd.grad

    def make(orig):
        @functools.wraps(orig)
        def wrapper(*a, **kw):
            _node_prehook(None)
            try:
                return orig(*a, **kw)
            finally:
                _backward_ended_hook()
        return wrapper

    torch.autograd.backward, torch.autograd.grad = make(orig_backward), make(orig_grad)

    class _Undo:
        @staticmethod
        def remove():
            torch.autograd.backward, torch.autograd.grad = orig_backward, orig_grad
    return _Undo()


def install(run, tracker, on_error):
    global _tracker, _run, _thread, _on_error
    _tracker, _run, _on_error = tracker, run, on_error
    _thread = threading.get_ident()
    mm = torch.nn.modules.module
    _handles.append(mm.register_module_forward_pre_hook(_pre_hook))
    try:  # always_call: the depth count stays right when a forward raises
        _handles.append(mm.register_module_forward_hook(_post_hook, always_call=True))
    except TypeError:
        _handles.append(mm.register_module_forward_hook(_post_hook))
    if not _HAS_NODE_PREHOOK:
        _handles.append(_fallback_backward_wrappers())


def disable():
    """Stops reporting (after an internal error, or in a forked child) and leaves the hooks registered:
    torch.compile may have guarded on them."""
    global _tracker
    _tracker = None


def uninstall():
    global _tracker, _run, _depth, _outer, _backward_open, _probe
    for h in _handles:
        h.remove()
    _handles.clear()
    _tracker = _run = _outer = None
    _depth = 0
    _backward_open = False
    _probe = None
