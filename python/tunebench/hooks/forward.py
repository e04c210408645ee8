"""Forward and backward, seen through PyTorch's own hook points: the global module forward hooks
(torch.nn.modules.module.register_module_forward_pre_hook / register_module_forward_hook) and, for the
backward, a pre-hook on the autograd node of each training forward's output plus an engine callback at the
end of that backward. Nothing of the script's is replaced: its modules, tensors and methods stay what they
are, and the hooks return None (they never change an input or an output).

A backward whose iteration showed no model call has no node of ours to reach: a forward-forward trainer calls
its layers' `forward` directly, a model may be plain tensors. `torch.autograd.backward` (what
`Tensor.backward` calls) is wrapped for it: such a backward is timed from the call to its return, and the
tracker may ask which optimizers' parameters it reaches (a walk of its graph, done only then). Said once
in a warning: that iteration's forward time is the loop's own. A model forward's tracker call may ask the
same of it (its parameters' optimizers and its inputs' graphs), in the rare case the step rule needs it.

Only the outermost call of a module with trainable parameters counts (a loss module, a metric or a
transform has none); calls in other threads (DataParallel's replicas) and inside a backward (activation
checkpointing re-runs the forward there) are left out. During an iteration's first training forward, the
first sequence module it calls is read too: its input says the batch dimension (batch_dim.py). Inside
torch.compile's tracing the hooks do nothing, so they add no graph break; a compiled model's own call (the
OptimizedModule) runs outside the graph and is what is timed.
"""

import functools
import threading
import time
import weakref

import torch

from .. import batch_dim
from .dataloader import batch_size_of
from .reporter import Reporter

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

_r = Reporter()           # the run, the tracker, on_error (reporter.py)
_thread = None
_depth = 0
_outer = None             # (module, record_function or None, grad enabled) of the outermost forward running
_handles = []
_trained = weakref.WeakSet()   # modules that ran a forward with grad enabled
_backward_open = False    # a backward's start was seen and its end callback is queued
_probe = None             # during an iteration's first training forward: [its input, first sequence module's batch]
_hooked_span = -1         # the span whose model forward's output carries our node pre-hook
_orig_backward = torch.autograd.backward
_REACH_NODES = 20000      # a bigger graph is not walked: which optimizers it reaches stays unknown
annotate = False          # a trace is being recorded: mark each outermost forward with a `## forward ##` range


_fail = _r.fail  # the hooks never raise into the script: an internal error turns TuneBench's timing off


_trainable_cache = weakref.WeakKeyDictionary()  # module -> (steps when checked, has a trainable parameter)


def _trainable(module):
    """Has the module a parameter that requires grad? Scanning a big model's parameters at every call costs
    more than the rest of the hooks together, so the answer is kept for the rest of the step (a script that
    freezes or unfreezes layers does it between steps)."""
    steps = _r.tracker.steps
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
    if _backward_open or _r.tracker is None:
        return
    _backward_open = True
    _r.tracker.backward_start(time.monotonic_ns())
    _engine.queue_callback(_backward_ended_hook)


def _backward_ended():
    global _backward_open
    if not _backward_open:
        return
    _backward_open = False
    if _r.tracker is not None:
        _r.tracker.backward_end(time.monotonic_ns())


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
    starts that backward (the loss's own few nodes before it are not counted). True when one was set."""
    if isinstance(out, torch.Tensor):
        fn = out.grad_fn
        if fn is not None:
            fn.register_prehook(_node_prehook)
            return True
    elif isinstance(out, (tuple, list)):
        return any([_watch_backward(o) for o in out[:8]])
    elif isinstance(out, dict):
        return any([_watch_backward(o) for o in list(out.values())[:8]])
    return False


# --- a backward without a model call in its iteration ----------------------------------------------------------

def _owners():
    """id(parameter) -> id(the optimizer that updates it)."""
    owner = {}
    for opt in list(_r.run.optimizers):
        for group in opt.param_groups:
            for p in group["params"]:
                owner[id(p)] = id(opt)
    return owner


def _reached(tensors, owner=None):
    """ids of the optimizers whose parameters the backward of `tensors` reaches (None: too big to walk)."""
    if owner is None:
        owner = _owners()
    if isinstance(tensors, torch.Tensor):
        tensors = (tensors,)
    stack = [t.grad_fn for t in tensors if isinstance(t, torch.Tensor)]
    seen, found = set(), set()
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if len(seen) > _REACH_NODES:
            return None
        leaf = getattr(fn, "variable", None)  # AccumulateGrad: the parameter its gradient goes to
        if leaf is not None:
            if id(leaf) in owner:
                found.add(owner[id(leaf)])
            continue
        stack.extend(nxt for nxt, _ in fn.next_functions)
    return found


def _forward_reached(module, args):
    """The optimizers a training forward of `module` feeds: those of its parameters, and those its inputs'
    graphs reach (a GAN's generator output going into the discriminator). Empty when no optimizer updates the
    module: that tells nothing."""
    owner = _owners()
    found = {owner[id(p)] for p in module.parameters() if id(p) in owner}
    if not found:
        return found
    inputs = [a for a in args[:8] if isinstance(a, torch.Tensor) and a.grad_fn is not None]
    more = _reached(inputs, owner) if inputs else set()
    return None if more is None else found | more


def _backward_call(*args, **kwargs):
    """torch.autograd.backward, timed by us when no model forward of this iteration set a node pre-hook."""
    global _backward_open
    tracker = _r.tracker
    if (tracker is None or _backward_open or threading.get_ident() != _thread or _graph_task_id() != -1
            or _compiling() or _hooked_span == tracker.span_serial()):
        return _orig_backward(*args, **kwargs)
    try:
        tensors = args[0] if args else kwargs.get("tensors")
        _backward_open = True
        tracker.backward_start(time.monotonic_ns(), lambda: _reached(tensors))
        _r.run.warn_once("direct-forward", "a backward() without a model call in its iteration (a layer's forward "
                                         "called directly, or a model of plain tensors): its forward time is the "
                                         "loop's own, not forward_ns", kind="forward")
    except Exception as e:  # noqa: BLE001
        _fail(e)
    try:
        return _orig_backward(*args, **kwargs)
    finally:
        try:
            _backward_ended()
        except Exception as e:  # noqa: BLE001
            _fail(e)


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
            _r.run.note_model(module)
    else:
        has_trained = module in _trained
    # The batch size is needed only without a DataLoader: asked for then.
    if _r.tracker.forward_start(grad, has_trained, lambda: batch_size_of(args), t,
                              lambda: _forward_reached(module, args)):
        _probe = [batch_dim.model_input(args), None]
    rf = None
    if annotate:
        rf = torch.autograd.profiler.record_function("## forward ##")
        rf.__enter__()
    _outer = (module, rf, grad)


def _exit(module, out):
    global _outer, _probe, _hooked_span
    _, rf, grad = _outer
    _outer = None
    if rf is not None:
        rf.__exit__(None, None, None)
    _r.tracker.forward_end(time.monotonic_ns())
    if _probe is not None:
        probe, _probe = _probe, None
        _tell_batch(*probe)
    if grad and out is not None and _HAS_NODE_PREHOOK and _watch_backward(out):
        _hooked_span = _r.tracker.span_serial()


def _tell_batch(inp, seq):
    samples, unit, tokens = batch_dim.decide(inp, seq, _r.tracker.loader_samples())
    if unit != "samples" or tokens is not None:
        _r.tracker.batch_told(samples, unit, tokens)
    if unit == "time steps":
        _r.run.warn_once("time-steps", "samples = time steps: the model's input begins with its sequence length "
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
    if _r.tracker is not None and threading.get_ident() == _thread:
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
    if _r.tracker is not None and threading.get_ident() == _thread and _depth:
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
    global _thread
    _r.attach(run, tracker, on_error)
    _thread = threading.get_ident()
    mm = torch.nn.modules.module
    _handles.append(mm.register_module_forward_pre_hook(_pre_hook))
    try:  # always_call: the depth count stays right when a forward raises
        _handles.append(mm.register_module_forward_hook(_post_hook, always_call=True))
    except TypeError:
        _handles.append(mm.register_module_forward_hook(_post_hook))
    if not _HAS_NODE_PREHOOK:
        _handles.append(_fallback_backward_wrappers())
    elif torch.autograd.backward is _orig_backward:
        torch.autograd.backward = functools.wraps(_orig_backward)(_backward_call)


def disable():
    """Stops reporting (after an internal error, or in a forked child) and leaves the hooks registered:
    torch.compile may have guarded on them."""
    _r.disable()


def uninstall():
    global _depth, _outer, _backward_open, _probe, _hooked_span
    for h in _handles:
        h.remove()
    _handles.clear()
    torch.autograd.backward = _orig_backward
    _hooked_span = -1
    _r.detach()
    _outer = None
    _depth = 0
    _backward_open = False
    _probe = None
