"""Traces of a script: torch.profiler sessions of `every` steps each, written as Kineto JSON chunks (torch
2.x; a torch without Kineto writes the legacy event array, which the importer reads too), with the input
shapes and Python stacks of the ops when asked (`detail`: "shapes", "stack"). Each step is a
`ProfilerStep#N` range so the analyses find steps as in any PyTorch profiler trace, and each model forward a
`## forward ##` range (hooks_forward), which the analyses count as the step's forward.

A span (iterations.py) is recorded under a provisional name, `tunebench.span#SERIAL`, because whether it is
a training iteration, and its step number, are known only later (at its backward, at its end). When the chunk
is written, the ranges of the spans that became steps are renamed `ProfilerStep#N` and the others (batches
of a validation pass) `## outside training ##`, so that a step range never holds time outside the training
iterations."""

import json
import os
import time

import torch

from . import hooks_forward

_SPAN = "tunebench.span#"
OUTSIDE = "## outside training ##"


class Tracer:
    def __init__(self, run, directory, every, detail=()):
        self.run = run
        self.detail = set(detail)
        self.dir = directory
        self.every = max(1, int(every))
        self.prof = None
        self.first = 0
        self.chunk = 0
        self.range = None      # (serial, record_function) of the span being recorded
        self.steps = {}        # serial -> step number, for the spans of this chunk that became steps
        os.makedirs(directory, exist_ok=True)

    def start(self, at_step):
        if self.prof is not None:
            return
        acts = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        self.prof = torch.profiler.profile(activities=acts, record_shapes="shapes" in self.detail,
                                           with_stack="stack" in self.detail)
        self.prof.__enter__()
        self.base_us = time.monotonic_ns() // 1000  # the legacy export counts from here
        self.first = at_step
        self.steps = {}
        hooks_forward.annotate = True

    def span_opened(self, serial):
        if self.prof is None:
            return
        self._close_range()
        rf = torch.autograd.profiler.record_function(_SPAN + str(serial))
        rf.__enter__()
        self.range = (serial, rf)

    def _close_range(self):
        if self.range is not None:
            self.range[1].__exit__(None, None, None)
            self.range = None

    def span_closed(self, serial, step=None):
        """The span ended: a step (its number), or not one (None)."""
        if self.prof is None or self.range is None or self.range[0] != serial:
            return
        self._close_range()
        if step is None:
            return
        self.steps[serial] = step
        if step + 1 - self.first >= self.every:
            self.stop(step)
            self.start(step + 1)

    def stop(self, last_step):
        if self.prof is None:
            return
        self._close_range()
        hooks_forward.annotate = False
        if torch.cuda.is_available():
            torch.cuda.synchronize()  # queued kernels belong in this chunk
        prof, self.prof = self.prof, None
        prof.__exit__(None, None, None)
        if not self.steps:
            return
        self.chunk += 1
        path = os.path.join(self.dir, "chunk-%05d.json" % self.chunk)
        try:
            prof.export_chrome_trace(path)
            _finish_chunk(path, self.base_us, self.steps)
        except Exception as e:  # a failed export loses a chunk, not the run
            self.run.ch.send("warning", message="trace chunk not written: %s" % e)
            return
        self.run.ch.send("trace", path=os.path.abspath(path), first_step=min(self.steps.values()),
                         last_step=max(self.steps.values()))


def _finish_chunk(path, base_us, steps):
    """Makes a chunk self-describing and placeable: the spans' ranges named as steps (`steps`: serial -> step
    number; the others as outside training), the machine's cores as a top-level "cpu_cores" string (as the engine's traces
    have: the loader-stall finding suggests workers up to the cores, not a guess of 4 on a 2-core machine),
    and, for torch 1.13's legacy export (a bare event array whose timestamps count from the profiler's start),
    the events moved onto the monotonic clock, so that chunks merged into one trace follow each other instead
    of all starting at 0. Kineto's object form keeps its own absolute times."""
    with open(path) as f:
        doc = json.load(f)
    events = doc if isinstance(doc, list) else doc.get("traceEvents") if isinstance(doc, dict) else None
    if isinstance(events, list):
        kept = []
        for e in events:
            name = e.get("name") if isinstance(e, dict) else None
            if isinstance(name, str) and name.startswith(_SPAN):
                try:
                    step = steps.get(int(name[len(_SPAN):]))
                except ValueError:
                    step = None
                # A span that stayed no training iteration (a validation batch) keeps its range under its
                # own name: the timeline shows that time as outside training, and the profiler's event
                # numbering stays whole (a gap in it says a trace was sampled).
                e["name"] = OUTSIDE if step is None else "ProfilerStep#%d" % step
            kept.append(e)
        events[:] = kept
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
