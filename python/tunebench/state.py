"""What one launched run knows: the protocol channels, the knob values and revision, and weak references to
the DataLoaders, live iterators, optimizers and models the script created. The steps themselves are counted
by iterations.Iterations."""

import resource
import time
import weakref

from . import source


def minor_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


class Run:
    def __init__(self, channel, inbox, steps_limit=0):
        self.ch = channel
        self.inbox = inbox
        self.steps_limit = steps_limit
        self.config = {}          # knob id -> value text (what is in effect, or will be at the next iterator)
        self.requested = {}       # --set values, applied when their object appears
        self.rev = 0
        self.step_i = 0           # steps sent so far
        self.hello_sent = False
        self.loaders = weakref.WeakSet()
        self.iterators = weakref.WeakSet()
        self.optimizers = weakref.WeakSet()
        self.models = []          # top-level modules found (strong refs: they live as long as the script's)
        self.trained_modules = weakref.WeakSet()  # modules seen running a forward with grad enabled
        self.tracer = None
        self.warned = set()
        self.forward_site = None  # (class, file, line) of the trained model's first call in the script

    def now_ns(self):
        return time.monotonic_ns()

    def note_model(self, module):
        """A module's first forward with grad enabled: it trains. Where it was called from is the line a
        tuning report (and its patch) wraps in autocast or feeds channels_last inputs."""
        self.trained_modules.add(module)
        site = source.caller_site()
        self.forward_site = (type(module).__name__, site["file"], site["line"])  # the compile knob's frame is named so
        self.ch.send("source", kind="forward", file=site["file"], line=site["line"], code=site["code"],
                     **{"class": type(module).__name__})

    def optimizer_ids(self):
        return [id(o) for o in list(self.optimizers)]

    def warn_once(self, key, message, **fields):
        if key in self.warned:
            return
        self.warned.add(key)
        self.ch.send("warning", message=message, **fields)
