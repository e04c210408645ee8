"""Traces of a script: torch.profiler sessions of `every` steps each, written as Chrome/Kineto JSON chunks
(Debian's torch 1.13 has no Kineto: its legacy format, which TuneBench's importer reads). Each step is a
`ProfilerStep#N` range so the analyses find steps as in any PyTorch profiler trace."""

import os

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
            _add_cores(path)
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


def _add_cores(path):
    """Records the machine's cores in the chunk, as the engine's traces do (a top-level "cpu_cores" string):
    the loader-stall finding suggests workers up to the cores, not a guess of 4 on a 2-core machine. torch
    1.13's legacy export is a bare event array: it becomes the object form's traceEvents."""
    with open(path, "rb") as f:
        text = f.read()
    at = len(text) - len(text.lstrip())
    cores = b'"cpu_cores": "%d"' % (os.cpu_count() or 1)
    if text[at:at + 1] == b"{":
        text = text[:at + 1] + cores + b", " + text[at + 1:]
    elif text[at:at + 1] == b"[":
        text = b"{" + cores + b', "traceEvents": ' + text[at:].rstrip() + b"}\n"
    else:
        return
    with open(path, "wb") as f:
        f.write(text)
