"""A hand-written update, seen from outside. A script without an optimizer object updates its parameters itself
after the backward - `p.data.add_(p.grad, alpha=-lr)`, `p -= lr * p.grad` or `p.add_(...)` under
torch.no_grad(), often after clip_grad_norm_ - and none of that is a call torch lets us hook. While the
tracker's update window is open (iterations.py: after a backward, in a script that holds no optimizer, until
the next forward, batch, backward or save), three signs are timed and reported as intervals:

* clip_grad_norm_ / clip_grad_value_ (the module functions are wrapped once, at install: a script binds them
  at import; outside a window the wrapper only calls through);
* a torch.no_grad() block during which a parameter of a trained model changed (its `_version`, which an
  in-place change under no_grad moves): metrics computed under no_grad change none and are not counted;
* a `.data` statement of a parameter: from the `.data` read to the release of the tensor it returned, which
  is right after the statement's in-place op (`.data` has a version counter of its own, so the parameter's
  does not move).

The no_grad methods and Parameter's `data` property are replaced only while a window is open (both are
restored when it closes), so a forward, a compiled graph or an optimizer never runs through them. Nothing
else in the window (the loss read, a print) is counted.
"""

import functools
import threading
import time
import weakref

import torch
import torch.nn.utils
import torch.nn.utils.clip_grad
from torch.autograd.grad_mode import no_grad

_CLIP_NAMES = ("clip_grad_norm_", "clip_grad_norm", "clip_grad_value_")
_CLIP_MODULES = (torch.nn.utils, torch.nn.utils.clip_grad)
_base_data = torch._C.TensorBase.__dict__["data"]
_orig_enter = no_grad.__dict__["__enter__"]
_orig_exit = no_grad.__dict__["__exit__"]

_run = None
_tracker = None
_on_error = None
_thread = None
_window = 0          # the open update window's number; 0 when none is open
_installed = False   # the no_grad methods and Parameter.data are ours now
_blocks = []         # open no_grad blocks entered in the window: [block, window, t0, parameter versions or None]
_refs = set()        # weak references to the `.data` tensors handed out in the window, until they are released
_params = None       # the trained models' parameters, listed once per window
_clip_orig = {}      # (module, name) -> the function the wrapper replaced


def _fail(e):
    global _tracker
    _tracker = None
    close_window()
    if _on_error is not None:
        _on_error(e)


def _seen(window, t0, t1):
    tracker = _tracker
    if tracker is not None:
        try:
            tracker.update_seen(window, t0, t1)
        except Exception as e:  # noqa: BLE001
            _fail(e)


def _versions():
    global _params
    if _params is None:
        _params = [p for m in list(_run.trained_modules) for p in m.parameters()] if _run is not None else []
    return sum(p._version for p in _params)


# --- the signs -----------------------------------------------------------------------------------------------

def _wrap_clip(fn):
    @functools.wraps(fn)
    def clip(*args, **kwargs):
        window = _window
        if not window or threading.get_ident() != _thread:
            return fn(*args, **kwargs)
        t0 = time.monotonic_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            _seen(window, t0, time.monotonic_ns())
    clip.__tunebench_wrapped__ = fn
    return clip


def _enter(self):
    out = _orig_enter(self)
    if _window and threading.get_ident() == _thread:
        try:
            # Only the outermost block is weighed (clip_grad_norm_ opens its own inside it).
            versions = _versions() if not _blocks else None
            _blocks.append([self, _window, time.monotonic_ns(), versions])
        except Exception as e:  # noqa: BLE001
            _fail(e)
    return out


def _exit(self, *exc):
    t1 = time.monotonic_ns()
    out = _orig_exit(self, *exc)
    if _blocks and _blocks[-1][0] is self:
        try:
            _, window, t0, versions = _blocks.pop()
            if versions is not None and window == _window and _versions() != versions:
                _seen(window, t0, t1)
        except Exception as e:  # noqa: BLE001
            _fail(e)
    return out


def _released(window, t0, ref):
    _refs.discard(ref)
    _seen(window, t0, time.monotonic_ns())


def _data_get(self):
    d = _base_data.__get__(self, type(self))
    window = _window
    if window and threading.get_ident() == _thread:
        try:
            _refs.add(weakref.ref(d, functools.partial(_released, window, time.monotonic_ns())))
        except TypeError:
            pass
    return d


def _data_set(self, value):
    _base_data.__set__(self, value)


_DATA = property(_data_get, _data_set, doc=_base_data.__doc__)


# --- the window ------------------------------------------------------------------------------------------------

def open_window(window):
    global _window, _installed, _params
    if _tracker is None:
        return
    _window, _params = window, None
    if not _installed:
        _installed = True
        no_grad.__enter__ = _enter
        no_grad.__exit__ = _exit
        torch.nn.Parameter.data = _DATA


def close_window():
    """Restores no_grad and Parameter.data. A no_grad block still open keeps our __exit__ (a `with` binds it
    at entry), which only calls the original once the window is gone."""
    global _window, _installed, _params
    _window, _params = 0, None
    _blocks.clear()
    _refs.clear()  # dropped weak references call nothing back
    if _installed:
        _installed = False
        no_grad.__enter__ = _orig_enter
        no_grad.__exit__ = _orig_exit
        if "data" in torch.nn.Parameter.__dict__:
            del torch.nn.Parameter.data


def install(run, tracker=None, on_error=None):
    global _run, _tracker, _on_error, _thread
    _run, _tracker, _on_error = run, tracker, on_error
    _thread = threading.get_ident()
    for mod in _CLIP_MODULES:
        for name in _CLIP_NAMES:
            fn = getattr(mod, name, None)
            if fn is not None and not hasattr(fn, "__tunebench_wrapped__"):
                _clip_orig[(mod, name)] = fn
                setattr(mod, name, _wrap_clip(fn))


def disable():
    global _tracker
    _tracker = None
    close_window()


def uninstall():
    global _run, _tracker
    disable()
    _run = None
    for (mod, name), fn in _clip_orig.items():
        setattr(mod, name, fn)
    _clip_orig.clear()
