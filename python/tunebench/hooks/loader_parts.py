"""Why the loader is slow: where each sample's time goes in the process that loads it (a DataLoader worker, or
the main process with num_workers=0) - the image file's open and its read + decode (PIL), each transform of a
torchvision Compose (v1 or v2) by its class name, the dataset's own code as the rest - and each batch's collate
function; and how busy each worker was over its life.

Times are exclusive: a part inside another (PIL decoding lazily inside a transform) is taken out of the outer
one, so the parts of a sample add up to its `__getitem__`. Only what runs inside a DataLoader's fetch is timed:
a Compose called in the training loop is not loader time.

Each loading process keeps totals and writes them to DIR/loader-<pid>.json (a rename, so a reader never sees
half a file) at most once a second, and a worker once more when it exits (multiprocessing runs its finalizers
when a worker's loop ends; one killed loses its last second). The main process reads every file (`read_all`).
Forked workers inherit the patches; spawned ones install them in the worker init that `attach` puts around the loader's own (`_WorkerInit`, a
picklable object). On only while the script is traced (the launcher calls `enable`). A short sample is timed one in
K (SAMPLE_COST_NS below): the totals written are scaled from the timed samples to every sample.
"""

import json
import os
import shutil
import threading
import time

from . import loader_lanes, loader_pin, loader_where

_dir = None        # where the totals go; None: off
_rec = None        # this process's _Recorder
_cpu0 = None       # the training process's CPU time at its first step's end (the launcher sets it)
# A write (a JSON of ~10 parts created, written and renamed) measured 190 us alone and ~600 us amid the loading
# on this VM's ext4, and the samples after it ran slower: at every 0.2 s the writes were ~1% of a 0.29 ms
# sample's loading (289.1 against 287.3 us a sample without them, each sample timed in one process on the --micro
# bench's samples; docs/analysis.md). Once a second: a fifth of that. What reads them: the live verdict after
# each chunk, and the run's end (a worker stopped with the run loses at most its last second; the verdict is made
# of ratios).
WRITE_EVERY_NS = 1_000_000_000
OWN = "dataset code"   # a sample's time outside every named part
# What timing a sample costs on this 2-core VM (CPython 3.11; bench/bench_loader_parts.py --micro): ~20 us for a
# sample of 7 parts (an ImageFolder JPEG through 4 transforms) when every sample is timed; one timed among untimed
# ones costs twice that (its code and data cold: +40 us on a 0.29 ms sample) and the few samples after it ~13 us
# more between them: ~30 us a sample and ~2.5 us a part. Short samples are timed one in K, K such that the timing
# costs under SHARE of the loading (the 0.29 ms sample of 8 parts: one in 64, the most); what the timed ones
# measured stands for the rest. A sample not timed still passes the wrappers (~1 us each way: into the sample and
# each part), so SHARE is a quarter of a percent (docs/analysis.md). A sample of ~20 ms or more is timed every time.
SAMPLE_COST_NS, PART_COST_NS, SHARE, MAX_EVERY = 30_000, 2_500, 0.0025, 64
# A process's first samples are timed and counted as they are, never scaled: they carry its start (imports, the
# decoder's first use), which scaled up would stand for samples that never pay it (a worker of 16 samples timed
# one in three read busier than its life).
EXACT_FIRST = 4


def _run_delay_ns(tid):
    """The thread's time runnable but waiting for a CPU (the kernel's schedstat run_delay), None where unreadable.
    Waiting for a CPU and waiting on a read look the same in wall time; this tells them apart (16 workers on 2
    cores wait to run, not on their files)."""
    try:
        with open("/proc/self/task/%d/schedstat" % tid) as f:
            return int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None


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
        # Sampled timing: of `samples`, `timed` were timed; what they measured (parts inside samples, their wall
        # and CPU) stands for all of them. Collates (a batch's: few) are all timed, their parts apart.
        self.timed = 0
        self.skip = 0                       # samples to let pass untimed before the next timed one
        self.sample_busy_ns = self.sample_cpu_ns = 0
        self.exact_parts = {}               # parts never scaled: a collate's, a process's first samples'
        self.exact_open = False             # the open sample is one of those first ones
        self.part_calls = 0                 # parts timed so far (a sample's are the count's growth over it)
        # part -> "path:line" of its code (loader_where): what runs it is kept when the part is first timed, and
        # looked up at the next write, outside every sample's time (reading source files takes milliseconds).
        self.where = {}
        # The timeline's lane (hooks/loader_lanes.py): while a chunk records, every sample and collate is timed
        # and kept as (name, start ns, ns) with its parts; `lane` says the open sample is one.
        self.tid = loader_lanes.LOADING_TID
        # A worker's loading thread (its main thread, which makes this recorder) and its wait for a CPU so far:
        # a worker's life is loading or idle on its queue, so its run delay is its loading's. The training
        # process's own (num_workers=0) is its training's too: not reported.
        self.native_tid = threading.get_native_id()
        self.delay0 = _run_delay_ns(self.native_tid) if who != "main" else None
        self.lane = False
        self.events = []
        self.dropped = 0
    def enter(self, name):
        """An outermost part (a sample, a collate) or a nested one: its frame [name, start ns, nested ns]."""
        if not self.stack:
            self.cpu0 = time.thread_time_ns()
            self.lane = loader_lanes.on()
        self.stack.append([name, time.monotonic_ns(), 0])

    def leave(self):
        name, t0, nested = self.stack.pop()
        dt = time.monotonic_ns() - t0
        parts = (self.parts if name != "collate" and not self.exact_open and (not self.stack or self.stack[0][0] != "collate")
                 else self.exact_parts)
        part = parts.get(name)
        if part is None:
            part = parts[name] = [0, 0]
        part[0] += dt - nested
        part[1] += 1
        self.part_calls += 1
        if self.lane:
            self.keep("sample" if name == OWN and not self.stack else name, t0, dt)
        if self.stack:
            self.stack[-1][2] += dt
        else:
            cpu = time.thread_time_ns() - self.cpu0
            self.busy_ns += dt
            self.cpu_ns += cpu
            if name == OWN and not self.exact_open:
                self.sample_busy_ns += dt
                self.sample_cpu_ns += cpu
        return dt

    def plan_next(self, dt, parts_before):
        """After a timed sample of `dt` ns: how many to let pass untimed so that timing costs under SHARE."""
        if self.exact_open:
            self.exact_open = False
            return
        self.timed += 1
        held = self.part_calls - parts_before
        cost = SAMPLE_COST_NS + PART_COST_NS * max(0, held)
        self.skip = min(MAX_EVERY, int(cost / (SHARE * max(dt, 1)))) if dt > 0 else 0

    def keep(self, name, t0, dt):
        if len(self.events) < loader_lanes.MAX_EVENTS:
            self.events.append((name, t0, dt))
        else:
            self.dropped += 1

    def write(self, now=None, force=False):
        now = now or time.monotonic_ns()
        every = loader_lanes.WRITE_EVERY_NS if self.events else WRITE_EVERY_NS
        if _dir is None or (not force and now - self.written < every):
            return
        self.written = now
        loader_lanes.append(self)
        for k, v in self.where.items():
            if not isinstance(v, str):
                self.where[k] = loader_where.where(k, v[0]) or (loader_where.where(v[1]) if v[1] else "")
        # The untimed samples are like the timed ones: what those measured, scaled to every sample.
        exact = min(self.samples, EXACT_FIRST)
        # Each timed sample stands for this many (its calls are counted so); its time, clamped below, may less.
        calls = scale = (self.samples - exact) / self.timed if self.timed else 1.0
        life = now - self.t0
        # Never busier than its life: what the timed samples stand for is scaled down to fit, if it must.
        room = life - (self.busy_ns - self.sample_busy_ns)
        if self.sample_busy_ns * scale > room > 0:
            scale = room / self.sample_busy_ns
        busy = self.busy_ns - self.sample_busy_ns + int(self.sample_busy_ns * scale)
        cpu = self.cpu_ns - self.sample_cpu_ns + int(self.sample_cpu_ns * scale)
        parts = {k: {"ns": int(v[0] * scale), "calls": int(round(v[1] * calls))} for k, v in self.parts.items()}
        for k, v in self.exact_parts.items():
            have = parts.setdefault(k, {"ns": 0, "calls": 0})
            have["ns"] += v[0]
            have["calls"] += v[1]
        doc = {"who": self.who, "pid": self.pid, "samples": self.samples, "batches": self.batches,
               "busy_ns": busy, "cpu_ns": cpu, "life_ns": life, "parts": parts,
               "timed_samples": self.timed + exact, "where": self.where}
        if self.delay0 is not None and threading.get_native_id() == self.native_tid:
            delay = _run_delay_ns(self.native_tid)
            if delay is not None:
                doc["run_delay_ns"] = max(0, delay - self.delay0)
        pin = loader_pin.totals() if self.who == "main" else None
        if pin:
            doc["pin_memory"] = pin
        path = os.path.join(_dir, "loader-%d.json" % self.pid)
        try:
            text = json.dumps(doc)
            with open(path + ".tmp", "w") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
        except OSError:
            pass  # a full disk loses the loader's breakdown, never the script's run


def _recorder():
    """This process's recorder (a forked worker starts its own: the parent's totals are not its own)."""
    global _rec
    if _rec is None:
        _rec = _Recorder("main")
    return _rec


def _forget_after_fork():
    global _rec
    _rec = None


# A forked process (a DataLoader worker) starts without the parent's recorder: no pid is compared per part.
os.register_at_fork(after_in_child=_forget_after_fork)
_mono = time.monotonic_ns


def _timed(name, fn, *args, **kwargs):
    """A part nested in a sample or a collate (outside a fetch it is not loader time): its exclusive time."""
    rec = _rec
    if rec is None or not rec.stack:
        return fn(*args, **kwargs)
    stack = rec.stack
    frame = [name, 0, 0]
    stack.append(frame)
    t0 = _mono()
    try:
        return fn(*args, **kwargs)
    finally:
        dt = _mono() - t0
        stack.pop()
        parts = rec.parts if stack[0][0] != "collate" and not rec.exact_open else rec.exact_parts
        part = parts.get(name)
        if part is None:
            part = parts[name] = [0, 0]
            if name not in rec.where:
                rec.where[name] = (fn, None)
        part[0] += dt - frame[2]
        part[1] += 1
        rec.part_calls += 1
        stack[-1][2] += dt
        if rec.lane:
            rec.keep(name, t0, dt)


def _one_sample(fn, *args):
    """One sample through fn(*args) (a __getitem__, or next() of an IterableDataset's iterator): timed, or
    (sampled) only counted. A call that raises (the stream's end) is no sample."""
    rec = _rec or _recorder()
    stack = rec.stack
    if stack:  # a Subset's inner dataset (the same sample), or a dataset read inside another's sample
        if stack[-1][0] == OWN:
            return fn(*args)
    elif rec.skip > 0 and not loader_lanes.on():  # sampled: counted, not timed (each is, while a chunk records)
        out = fn(*args)
        rec.skip -= 1
        rec.samples += 1
        return out
    before = rec.part_calls
    if not stack:
        rec.exact_open = rec.samples < EXACT_FIRST
    if OWN not in rec.where:  # the dataset's own code: its __getitem__, or the generator its __iter__ made
        rec.where[OWN] = (args[0], None) if fn is next else (fn, type(args[0]).__name__)
    rec.enter(OWN)
    done = False
    try:
        out = fn(*args)
        done = True
        return out
    finally:
        dt = rec.leave()
        if not stack and done:
            rec.samples += 1
            rec.plan_next(dt, before)
            rec.write()


def _sample(getitem):
    def timed_getitem(self, index):
        if _dir is None:
            return getitem(self, index)
        return _one_sample(getitem, self, index)
    timed_getitem.__wrapped__ = getitem
    timed_getitem._tunebench_sample = True
    return timed_getitem


class _TimedItems:
    """An IterableDataset's iterator whose every item is a sample, as a map-style dataset's __getitem__ is."""

    def __init__(self, it):
        self.it = it

    def __iter__(self):
        return self

    def __next__(self):
        if _dir is None:
            return next(self.it)
        return _one_sample(next, self.it)


def _items(iter_fn):
    def timed_iter(self):
        return _TimedItems(iter_fn(self))
    timed_iter.__wrapped__ = iter_fn
    timed_iter._tunebench_sample = True
    return timed_iter


def _patch_method(dataset, name, wrap):
    """`wrap` around the dataset's own `name` (where its class defines it), once; never a torch class's."""
    cls = type(dataset)
    fn = cls.__dict__.get(name)
    if fn is None:  # inherited: patch where it is defined
        for base in cls.__mro__[1:]:
            if name in base.__dict__:
                cls, fn = base, base.__dict__[name]
                break
    if fn is None or getattr(fn, "_tunebench_sample", False) or cls.__module__.startswith("torch."):
        return
    setattr(cls, name, wrap(fn))


def _patch_dataset(dataset):
    import torch.utils.data
    if isinstance(dataset, torch.utils.data.IterableDataset):
        _patch_method(dataset, "__iter__", _items)  # each item its iterator yields is a sample
        return
    # A torch wrapper (Subset, ConcatDataset) is patched through the dataset it wraps, when known.
    _patch_method(dataset, "__getitem__", _sample)
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
        if "collate" not in rec.where:
            rec.where["collate"] = (self.fn, None)
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

    def __init__(self, fn, out_dir, script=None):
        self.fn, self.out_dir, self.script = fn, out_dir, script

    def __call__(self, worker_id):
        global _dir, _rec
        _dir = self.out_dir
        _rec = _Recorder("worker %d" % worker_id)
        loader_where.set_script(self.script)
        loader_lanes.join(self.out_dir)
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
        rec = _rec
        if rec is None or not rec.stack:  # outside a timed sample: as it was
            return orig(*args, **kwargs)
        return _timed(part(args[0]) if callable(part) else part, orig, *args, **kwargs)
    timed._tunebench_part = True
    timed.__wrapped__ = orig
    setattr(cls, name, timed)


def _compose_v1(self, img):
    rec = _rec
    if rec is None or not rec.stack:
        return _compose_v1.orig(self, img)
    for t in self.transforms:
        img = _timed(type(t).__name__, t, img)
    return img


def _compose_v2(self, *inputs):
    rec = _rec
    if rec is None or not rec.stack:
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
        _decode_patched[0] = True


_decode_patched = [False]


def _patch_libraries():
    """PIL's open and decode, torchvision's Compose: the ones the script's process has imported."""
    import sys
    _patch_decode()
    image = sys.modules.get("PIL.Image")
    if image is not None and not getattr(image.open, "_tunebench_part", False):
        orig = image.open

        def timed_open(*args, **kwargs):
            if _decode_patched[0]:
                rec = _rec
                if rec is None or not rec.stack:  # outside a timed sample: as it was
                    return orig(*args, **kwargs)
                return _timed("open (PIL)", orig, *args, **kwargs)
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


def enable(out_dir, script=None):
    """The launcher, while tracing: loaders made from now on are timed, their totals under `out_dir`; a part's
    line is looked up in `script` (the user's) when the part is a library's."""
    global _dir
    os.makedirs(out_dir, exist_ok=True)
    _dir = out_dir
    loader_where.set_script(script)
    loader_lanes.create(out_dir)
    loader_pin.install()


def attach(loader):
    """A DataLoader just made (hooks/dataloader.py): time its samples and batches, here and in its workers."""
    if _dir is None:
        return
    _patch_dataset(loader.dataset)
    _patch_libraries()
    if not isinstance(loader.collate_fn, _TimedCollate):
        loader.collate_fn = _TimedCollate(loader.collate_fn)
    if not isinstance(loader.worker_init_fn, _WorkerInit):
        loader.worker_init_fn = _WorkerInit(loader.worker_init_fn, _dir, loader_where.script())


def read_all():
    """Every loading process's totals so far (this one's written first), in pid order."""
    if _dir is None:
        return []
    if (_rec is None or _rec.pid != os.getpid()) and loader_pin.totals():
        _recorder()  # workers load, this process only pins: its entry carries the pins
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


def on():
    """The loader is timed (the launcher enabled it, the run has not finished)."""
    return _dir is not None


def first_step_ended():
    """The launcher, at the first step's end: the training process's CPU time from here on is the training's."""
    global _cpu0
    if _cpu0 is None:
        _cpu0 = time.process_time_ns()


def snapshot():
    """The loading processes' totals as last written (each writes once a second while it loads), and the training
    process's CPU time since its first step (None before it): what a live verdict is made of. Reads only
    files, so any thread may ask (the trace writer's does, after each chunk)."""
    if _dir is None:
        return [], None
    out = []
    try:
        names = sorted(os.listdir(_dir))
    except OSError:
        return [], None
    for name in names:
        if name.startswith("loader-") and name.endswith(".json"):
            try:
                with open(os.path.join(_dir, name)) as f:
                    out.append(json.load(f))
            except (OSError, ValueError):
                pass
    cpu = time.process_time_ns() - _cpu0 if _cpu0 is not None else None
    return sorted(out, key=lambda d: d["pid"]), cpu


def finish():
    """The run's end: every process's totals (read_all), then their folder removed (a worker still writing
    after it finds no folder and writes nothing)."""
    global _dir
    out = read_all()
    if _dir is not None:
        shutil.rmtree(_dir, ignore_errors=True)
    _dir = None
    return out
