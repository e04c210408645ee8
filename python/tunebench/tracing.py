"""Traces of a script: torch.profiler sessions of `every` steps each, written as Chrome/Kineto JSON chunks
(Debian's torch 1.13 has no Kineto: its legacy format, which TuneBench's importer reads). Each step is a
`ProfilerStep#N` range so the analyses find steps as in any PyTorch profiler trace."""

import json
import os
import time

import torch


class Tracer:
    def __init__(self, run, directory, every):
        self.run = run
        self.dir = directory
        self.every = max(1, int(every))
        self.prof = None
        self.first = 0
        self.chunk = 0
        self.step_range = None
        os.makedirs(directory, exist_ok=True)

    def start(self, at_step):
        if self.prof is not None:
            return
        acts = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        self.prof = torch.profiler.profile(activities=acts)
        self.prof.__enter__()
        self.base_us = time.monotonic_ns() // 1000  # the legacy export counts from here
        self.first = at_step
        self._open_step(at_step)

    def _open_step(self, i):
        self.step_range = torch.autograd.profiler.record_function("ProfilerStep#%d" % i)
        self.step_range.__enter__()

    def _close_step(self):
        if self.step_range is not None:
            self.step_range.__exit__(None, None, None)
            self.step_range = None

    def stop(self, last_step):
        if self.prof is None:
            return
        self._close_step()
        if torch.cuda.is_available():
            torch.cuda.synchronize()  # queued kernels belong in this chunk
        prof, self.prof = self.prof, None
        prof.__exit__(None, None, None)
        self.chunk += 1
        path = os.path.join(self.dir, "chunk-%05d.json" % self.chunk)
        try:
            prof.export_chrome_trace(path)
            _finish_chunk(path, self.base_us, last_step)
        except Exception as e:  # a failed export loses a chunk, not the run
            self.run.ch.send("warning", message="trace chunk not written: %s" % e)
            return
        self.run.ch.send("trace", path=os.path.abspath(path), first_step=self.first, last_step=last_step)

    def on_step(self, i):
        """After step i ended."""
        if self.prof is None:
            return
        self._close_step()
        if i + 1 - self.first >= self.every:
            self.stop(i)
            self.start(i + 1)
        else:
            self._open_step(i + 1)


def _finish_chunk(path, base_us, last_step):
    """Makes a chunk self-describing and placeable: the machine's cores as a top-level "cpu_cores" string (as
    the engine's traces have: the loader-stall finding suggests workers up to the cores, not a guess of 4 on
    a 2-core machine), and, for torch 1.13's legacy export (a bare event array whose timestamps count from
    the profiler's start), the events moved onto the monotonic clock, so that chunks merged into one trace
    follow each other instead of all starting at 0. Kineto's object form keeps its own absolute times. The
    range of a step that never ended (the one open when the run stopped) is dropped: it is no step."""
    with open(path) as f:
        doc = json.load(f)
    events = doc if isinstance(doc, list) else doc.get("traceEvents") if isinstance(doc, dict) else None
    if isinstance(events, list):
        events[:] = [e for e in events if not _step_after(e, last_step)]
    if isinstance(doc, list):
        for e in doc:
            if isinstance(e, dict) and isinstance(e.get("ts"), (int, float)):
                e["ts"] += base_us
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict):
        return
    doc["cpu_cores"] = str(os.cpu_count() or 1)
    with open(path, "w") as f:
        json.dump(doc, f)


def _step_after(event, last_step):
    name = event.get("name") if isinstance(event, dict) else None
    if not isinstance(name, str) or not name.startswith("ProfilerStep#"):
        return False
    try:
        return int(name[len("ProfilerStep#"):]) > last_step
    except ValueError:
        return False

