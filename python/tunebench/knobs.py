"""The knobs a script can be tuned with, applied from outside the file (ids as in the engine where the
meaning is the same). Each knob: metadata for `hello`, its current value, and apply(run, value, live)
which changes the script's objects or torch's switches and says whether the change is pending (it takes
effect when a DataLoader iterator is re-created) - never a silent no-op: what cannot apply raises
KnobError with the reason."""

import inspect
import os

import torch
from torch.utils.data import DataLoader

from .hooks import dataloader as hooks_dataloader, model as hooks_model, optimizer as hooks_optimizer
from .knob_errors import KnobError, torch_major as _torch_major
from .knob_table import ROWS, script_fields


def _bool(v):
    s = str(v).strip().lower()
    if s in ("on", "true", "1", "yes"):
        return True
    if s in ("off", "false", "0", "no"):
        return False
    raise KnobError("expected on or off, got '%s'" % v)


def _int(v, lo, hi):
    try:
        n = int(str(v).strip())
    except ValueError:
        raise KnobError("expected an integer in [%d, %d], got '%s'" % (lo, hi, v))
    if n < lo or n > hi:
        raise KnobError("out of range [%d, %d]: %d" % (lo, hi, n))
    return n


def _cuda():
    return torch.cuda.is_available()


def cores():
    return os.cpu_count() or 1


class Knob:
    """A knob of a script. A subclass that names an `id` takes what the knob is from its row of the table; a
    row whose default is null keeps the class's `default` property (the interpreter's own value at start)."""
    id = ""
    title = ""
    description = ""
    type = "bool"
    default = "off"
    recommended = "on"
    choices = ("off", "on")
    lo, hi = 0, 1
    numerics = False
    process_scope = False  # takes effect only when the script starts (the tuner then uses fresh processes)
    snippet = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "id" not in cls.__dict__:
            return  # a family (LoaderKnob, ModelKnob), not a knob
        row = ROWS.get(cls.id)
        if row is None or "script" not in row:
            raise TypeError("knob class %s: knobs.json has no script row '%s'" % (cls.__name__, cls.id))
        f = script_fields(row)
        cls.type, cls.title, cls.description = f["type"], f["title"], f["description"]
        cls.recommended, cls.snippet = f["recommended"], f.get("snippet", "")
        cls.numerics, cls.process_scope = f.get("numerics", False), f.get("process_scope", False)
        cls.choices = tuple(f["choices"]) if cls.type == "enum" else ("off", "on")
        cls.lo, cls.hi = (f["min"], f["max"]) if cls.type == "int" else (0, 1)
        if f["default"] is not None:
            cls.default = f["default"]
        elif not isinstance(cls.__dict__.get("default"), property):
            raise TypeError("knob %s: a null default in knobs.json needs a default property here" % cls.id)

    def applicable(self):
        return True, ""

    def unavailable(self):
        return [], ""

    def normalize(self, v):
        if self.type == "bool":
            return "on" if _bool(v) else "off"
        if self.type == "int":
            return str(_int(v, self.lo, self.hi))
        s = str(v).strip().lower()
        if s not in self.choices:
            raise KnobError("expected one of %s, got '%s'" % (", ".join(self.choices), v))
        bad, why = self.unavailable()
        if s in bad:
            raise KnobError(why)
        return s

    def current(self, run):
        return run.config.get(self.id, self.default)

    def apply(self, run, value, live):
        """Returns (pending: bool, note: str). Raises KnobError."""
        raise NotImplementedError

    def applicable_to(self, run):
        """Whether the knob has anything to change in this run (the script's steps as seen so far); applicable()
        is what the machine and torch allow, asked before the script runs."""
        return self.applicable()

    def applicable_where(self, has, why):
        """applicable_to() for a knob that acts on one kind of the script's objects: applicable(), and then
        (False, why) while `has()` finds none of them in its steps."""
        ok, reason = self.applicable()
        if ok and not has():
            return False, why
        return ok, reason

    def describe(self, run):
        ok, why = self.applicable_to(run)
        bad, bad_why = self.unavailable()
        return {"id": self.id, "title": self.title, "description": self.description, "type": self.type,
                "default": self.default, "recommended": self.recommended,
                "choices": list(self.choices) if self.type != "int" else [], "min": self.lo, "max": self.hi,
                "value": self.current(run), "applicable": ok, "reason": why or bad_why,
                "unavailable_values": bad, "changes_numerics": self.numerics, "process_scope": self.process_scope,
                "seeds": [], "applies_to": "scripts", "pytorch_snippet": self.snippet}


# --- loader knobs: every DataLoader's constructor argument, changed where the user passed it -------------

class LoaderKnob(Knob):
    attr = ""

    def applicable_to(self, run):
        # Described after the first step: a script that never made a DataLoader makes its batches itself, and a
        # loader knob would change nothing but the tuner's time (a regression script's tune tried workers four
        # times, and the first trial left its process ten times slower).
        return self.applicable_where(
            lambda: list(run.loaders),
            "no DataLoader in the script's steps (it makes its batches itself): nothing to change")

    def apply(self, run, value, live):
        return hooks_dataloader.set_loader_option(run, self, value, live)


class Workers(LoaderKnob):
    id, attr = "workers", "num_workers"


class PinMemory(LoaderKnob):
    id, attr = "pin_memory", "pin_memory"

    def applicable(self):
        return (True, "") if _cuda() else (False, "needs CUDA: pinned memory only speeds up copies to a GPU")


class Prefetch(LoaderKnob):
    id, attr = "prefetch", "prefetch_factor"


class PersistentWorkers(LoaderKnob):
    # Live, not process-scope: the hook sets the field past DataLoader's refusal and re-creates the iterator
    # (hooks_dataloader.set_loader_option). As a process knob the tuner's live child dropped it from the
    # workers rung, so every short epoch re-forked its worker and workers measured 0.77x instead of faster.
    id, attr = "persistent_workers", "persistent_workers"


class InOrder(LoaderKnob):
    id, attr = "in_order", "in_order"

    def applicable(self):
        if "in_order" not in inspect.signature(DataLoader.__init__).parameters:
            return False, "needs torch >= 2.6 (DataLoader's in_order; this is %s)" % torch.__version__
        return True, ""


# --- process-wide switches --------------------------------------------------------------------------------

class IntraOpThreads(Knob):
    id = "intra_op_threads"

    # torch's own count at start (Debian's 1.13 starts with one thread per physical core, 1 on this 2-vCPU VM).
    _at_start = None

    @property
    def default(self):
        if IntraOpThreads._at_start is None:
            IntraOpThreads._at_start = torch.get_num_threads()
        return str(IntraOpThreads._at_start)

    def apply(self, run, value, live):
        self.default  # record torch's own count before the first change
        n = int(value)
        if n == 0:
            n = max(1, cores() - int(run.config.get("workers", "0") or 0))
        torch.set_num_threads(n)
        return False, "torch.set_num_threads(%d)" % n


class CudnnBenchmark(Knob):
    # Process-scope, as the engine's: PyTorch caches the algorithm it chose for a convolution's shapes, by
    # benchmark or by its heuristics alike, and answers from that cache whatever the flag says, so a running
    # script cannot switch it either way for the shapes it has seen; the tuner measures it in fresh processes,
    # on top of every in-process winner, and a live change is refused below.
    id = "cudnn_benchmark"

    def applicable(self):
        return (True, "") if _cuda() else (False, "needs CUDA")

    def apply(self, run, value, live):
        want = value == "on"
        if live and want != torch.backends.cudnn.benchmark:
            raise KnobError("cudnn_benchmark=%s in a running script changes nothing for the shapes already seen "
                            "(PyTorch keeps the algorithms it chose, by benchmark or by its heuristics): start a new "
                            "run with it %s" % (value, value))
        torch.backends.cudnn.benchmark = want
        return False, ""


class Tf32(Knob):
    id = "tf32"

    def applicable(self):
        if not _cuda():
            return False, "needs CUDA"
        if torch.cuda.get_device_capability()[0] < 8:
            return False, "TF32 needs an Ampere or newer GPU"
        return True, ""

    def apply(self, run, value, live):
        torch.backends.cuda.matmul.allow_tf32 = value == "on"
        return False, ""


class ZeroGradNone(Knob):
    id = "zero_grad_none"

    @property
    def default(self):
        return "on" if _torch_major() >= 2 else "off"

    def applicable_to(self, run):
        return self.applicable_where(
            lambda: list(run.optimizers),
            "no torch.optim optimizer in the script's steps (its update is hand-written): nothing to change")

    def apply(self, run, value, live):
        run.requested[self.id] = value
        hooks_optimizer.apply_zero_grad_none(run)  # the wrapper reads the value at every call
        return False, ""


class AnomalyDetection(Knob):
    id = "anomaly_detection"

    def current(self, run):
        return run.config.get(self.id, "on" if torch.is_anomaly_enabled() else "off")

    def apply(self, run, value, live):
        hooks_optimizer.real_set_detect_anomaly(value == "on")
        return False, ""


# --- the model's forward ----------------------------------------------------------------------------------

class ModelKnob(Knob):
    """A knob that acts on the model's forward: nothing to change where the steps run no torch.nn.Module (a
    model of raw tensors and a hand-written update)."""

    def applicable_to(self, run):
        return self.applicable_where(
            lambda: run.models or list(run.trained_modules),
            "no torch.nn.Module forward in the script's steps (its model is raw tensors): nothing to change")


class Amp(ModelKnob):
    id = "amp"

    def unavailable(self):
        if not _cuda():  # no CUDA advice on a CPU: bf16 is the CPU's reduced precision
            return ["fp16"], "amp=fp16 is for CUDA devices: on a CPU, bf16 is the reduced precision (amp=bf16)"
        return ["fp16"], ("amp=fp16 needs a code change: scaler = torch.amp.GradScaler('cuda'); "
                          "scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()")

    def apply(self, run, value, live):
        return hooks_model.set_amp(run, value)


class ChannelsLast(ModelKnob):
    id = "channels_last"

    def applicable_to(self, run):
        ok, why = super().applicable_to(run)
        if ok and (run.models or list(run.trained_modules)):
            modules = list(run.models) + list(run.trained_modules)
            if not any(p.dim() == 4 for m in modules for p in m.parameters()):
                return False, "no 4-D weight (no convolution) in the model: its memory format changes nothing"
        return ok, why

    def apply(self, run, value, live):
        return hooks_model.set_channels_last(run, value == "on")


class Compile(ModelKnob):
    id = "compile"

    def applicable(self):
        return (True, "") if _torch_major() >= 2 else (False, "needs torch >= 2.0 (this is %s)" % torch.__version__)

    def apply(self, run, value, live):
        return hooks_model.set_compile(run, value == "on")


CATALOG = [Workers(), PinMemory(), Prefetch(), PersistentWorkers(), InOrder(), IntraOpThreads(), CudnnBenchmark(), Tf32(),
           ZeroGradNone(), AnomalyDetection(), Amp(), ChannelsLast(), Compile()]
BY_ID = {k.id: k for k in CATALOG}
# The table's knobs that the launcher has no class for, and why: a code change (not_for_scripts), or what
# tunebench-cli sets around the interpreter (script_env: the allocator).
ENGINE_ONLY = {i: r.get("not_for_scripts") or r.get("script_env") for i, r in ROWS.items() if "script" not in r}


def lookup(knob_id):
    k = BY_ID.get(knob_id)
    if k is None:
        if knob_id in ENGINE_ONLY:
            raise KnobError("knob '%s' does not apply to scripts: %s" % (knob_id, ENGINE_ONLY[knob_id]))
        raise KnobError("unknown knob '%s' (script knobs: %s)" % (knob_id, ", ".join(BY_ID)))
    ok, why = k.applicable()
    if not ok:
        raise KnobError("knob %s does not apply here: %s" % (knob_id, why))
    return k


def parse_set(text):
    """'k=v,k=v' -> [(id, normalized value)]. Raises KnobError."""
    out = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        if "=" not in item:
            raise KnobError("bad knob setting '%s': expected knob=value" % item)
        k, v = (s.strip() for s in item.split("=", 1))
        knob = lookup(k)
        try:
            out.append((k, knob.normalize(v)))
        except KnobError as e:
            raise KnobError("bad value for %s: %s" % (k, e))
    return out
