"""The records the step rule (iterations.py) works with: a span (one candidate iteration, with its phase
times), an outside interval (time between iterations, with its evaluation and checkpoint parts), and the sink
interface the launcher implements to hear about them."""

FORWARD, BACKWARD, OPTIM, SAVE = "forward", "backward", "optim", "save"


class Span:
    """One candidate iteration (see the module docstring)."""

    __slots__ = ("serial", "t0", "loader", "samples", "data_wait_ns", "forward_ns", "backward_ns", "optim_ns",
                 "save_ns", "trained", "forwards", "train_forwards", "stepped", "optimizer_steps", "mark",
                 "fresh", "unit", "tokens", "updates", "held", "loader_pass", "loader_len", "closure",
                 "__weakref__")

    def __init__(self, serial, t0, loader):
        self.serial = serial
        self.t0 = t0
        self.loader = loader          # the DataLoader whose batch opened it (None: no DataLoader)
        self.samples = 0
        self.data_wait_ns = 0
        self.forward_ns = 0
        self.backward_ns = 0
        self.optim_ns = 0
        self.save_ns = 0
        self.trained = False          # a backward ran in it
        self.forwards = 0             # model forwards of any kind
        self.train_forwards = 0       # ... with grad enabled
        self.stepped = set()          # ids of the optimizers that stepped in it
        self.optimizer_steps = 0
        self.mark = None              # the sink's own bookkeeping (page faults, scaler state at the start)
        self.fresh = False            # opened for a batch still being fetched
        self.unit = "samples"         # what `samples` counts (batch_dim.py)
        self.tokens = None            # a sequence model's batch x sequence length
        self.updates = None           # a hand-written update's intervals: [[t0, t1], ...], disjoint, in order
        self.held = None              # () -> the iterator that gave its batch, None once the script dropped it
        self.loader_pass = 0          # the training loader's passes that had ended when it was emitted
        self.loader_len = 0           # batches in a pass of its loader (len(DataLoader)); 0 when it has no length
        self.closure = False          # an optimizer's step() ran it with a closure (LBFGS)

    def evaluations(self):
        """How many times a step(closure) call evaluated its closure (its forwards with grad): LBFGS's count falls
        as it converges, and with it the step's time; 0 for an iteration without a closure."""
        return self.train_forwards if self.closure else 0

    def add_update(self, t0, t1):
        """One sign of a hand-written update, [t0, t1]. Signs nest (a no_grad block around the parameters'
        statements, clip_grad_norm_'s own no_grad), so their union is kept, never their sum: disjoint intervals
        in order, the ones this one touches merged into it. They arrive as they end, so those are at the end."""
        iv = self.updates
        if iv is None:
            iv = self.updates = []
        hi = len(iv)
        while hi and iv[hi - 1][0] > t1:
            hi -= 1
        lo = hi
        while lo and iv[lo - 1][1] >= t0:
            lo -= 1
        if lo < hi:
            t0, t1 = min(t0, iv[lo][0]), max(t1, iv[hi - 1][1])
        iv[lo:hi] = [[t0, t1]]

    def update_ns(self):
        return sum(b - a for a, b in self.updates) if self.updates else 0


class Outside:
    """Time between training iterations."""

    __slots__ = ("t0", "after_step", "epoch", "checkpoint_ns", "eval_first", "eval_last")

    def __init__(self, t0, after_step, epoch=None):
        self.t0 = t0
        self.after_step = after_step  # index of the step before it; None before the first step
        self.epoch = epoch            # the training loader's pass that ended where it began (1-based)
        self.checkpoint_ns = 0
        self.eval_first = None
        self.eval_last = None

    def evaluation(self, t0, t1):
        self.eval_first = t0 if self.eval_first is None else min(self.eval_first, t0)
        self.eval_last = t1 if self.eval_last is None else max(self.eval_last, t1)

    def parts(self, end):
        """(evaluation_ns, checkpoint_ns, other_ns) of the interval [t0, end]: evaluation is the stretch from
        the first to the last evaluation activity (the metrics between batches included), less the time in
        torch.save; other is the rest."""
        wall = max(0, end - self.t0)
        ckpt = min(self.checkpoint_ns, wall)
        ev = 0
        if self.eval_first is not None:
            ev = max(0, min(self.eval_last, end) - max(self.eval_first, self.t0))
            ev = max(0, min(ev, wall - ckpt))
        return ev, ckpt, wall - ev - ckpt


class Sink:
    """What the tracker reports to (the launcher implements it)."""

    def span_opened(self, span):
        pass

    def step(self, i, span, end_ns):
        pass

    def span_dropped(self, span):
        pass

    def outside(self, record, end_ns, until):
        pass

    def training_began(self, span):
        """The run's first training iteration has begun (its first backward): `span` may be long before it is a
        step (LBFGS runs up to 20 forward/backward passes inside one step() call)."""

    def update_window(self, serial):
        """A hand-written update may run now (serial > 0: the window's number, for update_seen), or no longer
        (0)."""

    def poll(self):
        """Called now and then while outside the training iterations (a long validation), where no step
        boundary comes to read the parent's messages."""
