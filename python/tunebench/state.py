"""What one launched run knows: the protocol channels, the knob values and revision, the step counters, and
weak references to the DataLoaders, live iterators, optimizers and models the script created."""

import resource
import time
import weakref


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
        self.step_i = 0
        self.t_prev_ns = None     # end of the previous step (or the first batch request)
        self.samples = 0          # samples yielded since the previous step
        self.data_wait_ns = 0     # time inside DataLoader __next__ since the previous step
        self.faults0 = minor_faults()
        self.hello_sent = False
        self.loaders = weakref.WeakSet()
        self.iterators = weakref.WeakSet()
        self.optimizers = weakref.WeakSet()
        self.models = []          # top-level modules found (strong refs: they live as long as the script's)
        self.tracer = None
        self.warned = set()

    def now_ns(self):
        return time.monotonic_ns()

    def warn_once(self, key, message):
        if key in self.warned:
            return
        self.warned.add(key)
        self.ch.send("warning", message=message)
