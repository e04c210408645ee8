"""Why the loader is slow: where each sample's time goes in the process that loads it (a DataLoader worker, or
the main process with num_workers=0) - the image file's open and its read + decode (PIL), each transform of a
torchvision Compose (v1 or v2) by its class name, the dataset's own code as the rest - and each batch's collate
function; and how busy each worker was over its life.

Times are exclusive: a part inside another (PIL decoding lazily inside a transform) is taken out of the outer
one, so the parts of a sample add up to its `__getitem__`. Only what runs inside a DataLoader's fetch is timed:
a Compose called in the training loop is not loader time.

Each loading process keeps totals and writes them to DIR/loader-<pid>.json (a rename, so a reader never sees
half a file) at most every 0.2 s, and a worker once more when it exits (multiprocessing runs its finalizers when
a worker's loop ends; one killed loses its last 0.2 s). The main process reads every file (`read_all`). Forked workers inherit the patches;
spawned ones install them in the worker init that `attach` puts around the loader's own (`_WorkerInit`, a
picklable object). On only while the script is traced (the launcher calls `enable`).
"""

import json
import os
import shutil
import time

_dir = None        # where the totals go; None: off
_rec = None        # this process's _Recorder
WRITE_EVERY_NS = 200_000_000  # a JSON of ~10 parts and a rename: ~0.1 ms, under 0.1% at this rate
OWN = "dataset code"   # a sample's time outside every named part


class _Recorder:
    def __init__(self, who):
        self.who = who                      # "main" or "worker N"
        self.pid = os.getpid()
        self.t0 = time.monotonic_ns()       # when this process began loading
        self.parts = {}                     # part -> [exclusive ns, calls]
        self.samples = self.batches = 0
        self.busy_ns = 0                    # samples' and collates' wall time, outermost only
        self.cpu_ns = 0                     # the loading thread's CPU time in them (busy - cpu: reads, sleeps)
        self.stack = []                     # open timers: [name, start ns, nested ns]
        self.cpu0 = 0
        self.written = 0

    def enter(self, name):
        if not self.stack:
            self.cpu0 = time.thread_time_ns()
        self.stack.append([name, time.monotonic_ns(), 0])

    def leave(self):
        name, t0, nested = self.stack.pop()
        dt = time.monotonic_ns() - t0
        part = self.parts.setdefault(name, [0, 0])
        part[0] += dt - nested
        part[1] += 1
        if self.stack:
            self.stack[-1][2] += dt
        else:
            self.busy_ns += dt
            self.cpu_ns += time.thread_time_ns() - self.cpu0
        return dt

    def write(self, now=None, force=False):
        now = now or time.monotonic_ns()
        if _dir is None or (not force and now - self.written < WRITE_EVERY_NS):
            return
        self.written = now
        doc = {"who": self.who, "pid": self.pid, "samples": self.samples, "batches": self.batches,
               "busy_ns": self.busy_ns, "cpu_ns": self.cpu_ns, "life_ns": now - self.t0,
               "parts": {k: {"ns": v[0], "calls": v[1]} for k, v in self.parts.items()}}
        path = os.path.join(_dir, "loader-%d.json" % self.pid)
        try:
            with open(path + ".tmp", "w") as f:
                json.dump(doc, f)
            os.replace(path + ".tmp", path)
        except OSError:
            pass  # a full disk loses the loader's breakdown, never the script's run


def _recorder():
    """This process's recorder (a forked worker starts its own: the parent's totals are not its own)."""
    global _rec
    if _rec is None or _rec.pid != os.getpid():
        _rec = _Recorder("main")
    return _rec


def _timed(name, fn, *args, **kwargs):
    rec = _rec
    if rec is None or not rec.stack or rec.pid != os.getpid():  # outside a fetch: not loader time
        return fn(*args, **kwargs)
    rec.enter(name)
    try:
        return fn(*args, **kwargs)
    finally:
        rec.leave()


def _sample(getitem):
    def timed_getitem(self, index):
        if _dir is None:
            return getitem(self, index)
        rec = _recorder()
        nested = bool(rec.stack) and rec.stack[-1][0] == OWN  # a Subset's inner dataset: the same sample
        rec.enter(OWN)
        try:
            return getitem(self, index)
        finally:
            rec.leave()
            if not nested:
                rec.samples += 1
                if not rec.stack:
                    rec.write()
    timed_getitem.__wrapped__ = getitem
    timed_getitem._tunebench_sample = True
    return timed_getitem


def _patch_dataset(dataset):
    cls = type(dataset)
    getitem = cls.__dict__.get("__getitem__")
    if getitem is None:  # inherited: patch where it is defined
        for base in cls.__mro__[1:]:
            if "__getitem__" in base.__dict__:
                cls, getitem = base, base.__dict__["__getitem__"]
                break
    if getitem is None or getattr(getitem, "_tunebench_sample", False) or cls.__module__.startswith("torch."):
        return  # a torch wrapper (Subset, ConcatDataset) is patched through the dataset it wraps, when known
    setattr(cls, "__getitem__", _sample(getitem))
    inner = getattr(dataset, "dataset", None)
    if inner is not None and inner is not dataset:
        _patch_dataset(inner)


class _TimedCollate:
    """The loader's collate_fn, timed; picklable (a spawned worker gets it) when the function it wraps is."""

    def __init__(self, fn):
        self.fn = fn
        self.__wrapped__ = fn

    def __call__(self, batch):
        if _dir is None:
            return self.fn(batch)
        rec = _recorder()
        rec.enter("collate")
        try:
            return self.fn(batch)
        finally:
            rec.leave()
            rec.batches += 1
            if not rec.stack:
                rec.write()


class _WorkerInit:
    """Around the loader's worker_init_fn: a worker starts its own recorder, patches what a spawned process
    lacks, then runs the script's own init."""

    def __init__(self, fn, out_dir):
        self.fn, self.out_dir = fn, out_dir

    def __call__(self, worker_id):
        global _dir, _rec
        _dir = self.out_dir
        _rec = _Recorder("worker %d" % worker_id)
        try:
            import multiprocessing.util
            multiprocessing.util.Finalize(None, _rec.write, kwargs={"force": True}, exitpriority=100)
            import torch.utils.data
            info = torch.utils.data.get_worker_info()
            if info is not None:
                _patch_dataset(info.dataset)
            _patch_libraries()
        except Exception:  # noqa: BLE001 - ours: the worker loads on without the breakdown
            pass
        if self.fn is not None:
            self.fn(worker_id)


def _wrap_method(cls, name, part):
    orig = cls.__dict__.get(name)
    if orig is None or getattr(orig, "_tunebench_part", False):
        return

    def timed(*args, **kwargs):
        return _timed(part(args[0]) if callable(part) else part, orig, *args, **kwargs)
    timed._tunebench_part = True
    timed.__wrapped__ = orig
    setattr(cls, name, timed)


def _compose_v1(self, img):
    rec = _rec
    if rec is None or not rec.stack or rec.pid != os.getpid():
        return _compose_v1.orig(self, img)
    for t in self.transforms:
        img = _timed(type(t).__name__, t, img)
    return img


def _compose_v2(self, *inputs):
    rec = _rec
    if rec is None or not rec.stack or rec.pid != os.getpid():
        return _compose_v2.orig(self, *inputs)
    needs_unpacking = len(inputs) > 1  # as torchvision's own forward
    outputs = None
    for t in self.transforms:
        outputs = _timed(type(t).__name__, t, *inputs)
        inputs = outputs if needs_unpacking else (outputs,)
    return outputs


def _patch_decode():
    """PIL's decode, once PIL has imported it (never imported here: a module imported inside a traced chunk with
    stacks gave Kineto a frame named by the module's first line, a docstring's three quotes, unescaped)."""
    import sys
    pil = sys.modules.get("PIL.ImageFile")
    if pil is not None:
        _wrap_method(pil.ImageFile, "load", "read + decode (PIL)")


def _patch_libraries():
    """PIL's open and decode, torchvision's Compose: the ones the script's process has imported."""
    import sys
    _patch_decode()
    image = sys.modules.get("PIL.Image")
    if image is not None and not getattr(image.open, "_tunebench_part", False):
        orig = image.open

        def timed_open(*args, **kwargs):
            try:
                return _timed("open (PIL)", orig, *args, **kwargs)
            finally:
                _patch_decode()  # PIL imports its ImageFile with the first plugin, inside the first open
        timed_open._tunebench_part = True
        timed_open.__wrapped__ = orig
        image.open = timed_open
    v1 = sys.modules.get("torchvision.transforms.transforms")
    if v1 is not None and not hasattr(_compose_v1, "orig"):
        _compose_v1.orig = v1.Compose.__call__
        v1.Compose.__call__ = _compose_v1
    v2 = sys.modules.get("torchvision.transforms.v2._container")
    if v2 is not None and not hasattr(_compose_v2, "orig"):
        _compose_v2.orig = v2.Compose.forward
        v2.Compose.forward = _compose_v2


def enable(out_dir):
    """The launcher, while tracing: loaders made from now on are timed, their totals under `out_dir`."""
    global _dir
    os.makedirs(out_dir, exist_ok=True)
    _dir = out_dir


def attach(loader):
    """A DataLoader just made (hooks/dataloader.py): time its samples and batches, here and in its workers."""
    if _dir is None:
        return
    _patch_dataset(loader.dataset)
    _patch_libraries()
    if not isinstance(loader.collate_fn, _TimedCollate):
        loader.collate_fn = _TimedCollate(loader.collate_fn)
    if not isinstance(loader.worker_init_fn, _WorkerInit):
        loader.worker_init_fn = _WorkerInit(loader.worker_init_fn, _dir)


def read_all():
    """Every loading process's totals so far (this one's written first), in pid order."""
    if _dir is None:
        return []
    if _rec is not None and _rec.pid == os.getpid():
        _rec.write(force=True)
    out = []
    for name in sorted(os.listdir(_dir)):
        if name.startswith("loader-") and name.endswith(".json"):
            try:
                with open(os.path.join(_dir, name)) as f:
                    out.append(json.load(f))
            except (OSError, ValueError):
                pass  # being replaced this instant: the next read has it
    return sorted(out, key=lambda d: d["pid"])


def finish():
    """The run's end: every process's totals (read_all), then their folder removed (a worker still writing
    after it finds no folder and writes nothing)."""
    global _dir
    out = read_all()
    if _dir is not None:
        shutil.rmtree(_dir, ignore_errors=True)
    _dir = None
    return out
