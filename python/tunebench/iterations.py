"""What a step is: one training iteration of the script's loop, told apart from the time around it.

The hooks report events (a DataLoader batch fetched or a pass over it ended, a model forward, a backward, an
optimizer step, a torch.save); this module turns them into steps and "outside" intervals. It knows nothing of
torch, so every rule below is tested with plain objects.

The rule
--------
* A **span** is one candidate iteration. A batch fetched from a DataLoader while no span is open opens one
  (at the start of the fetch, or at the creation of the iterator for its first batch: a new pass's worker
  start-up is data wait, as in the engine). Without a DataLoader, the first forward with grad enabled opens it.
* A span becomes a **training iteration** at its first backward (the loader that opened it is then a
  training loader). A span that ends without a backward (a validation batch, a no-grad pass) is outside time.
* A training iteration ends (**the step boundary**) at the first of:
  - the next batch fetched from the loader that opened it, or from any training loader;
  - the end of that loader's pass (the `for` loop asks for a batch and there is none);
  - something that is not training: a forward with grad disabled of a model that has trained (validation,
    a sample for a log), a batch from a DataLoader that is not a training loader, a torch.save;
  - without a DataLoader, the next forward with grad enabled (or the next backward, for a model without
    nn.Module calls) once the iteration's updates are done: with at most one optimizer, any backward
    before it is enough (gradient accumulation: every batch is a step); with several, each optimizer that
    stepped in the previous iteration has stepped (a GAN's D and G are one iteration); an optimizer that
    steps a second time also starts a new one (LBFGS's `step(closure)` loop). A forward (or a backward
    without a model call seen in its iteration: a layer's `forward` called directly) also starts one when
    every optimizer it feeds has stepped in this iteration: a forward-forward trainer's layers each have
    their own loss, backward and Adam, one layer after the other, and its first layer's second pass is
    the second iteration although the second layer's optimizer has not stepped yet. What a forward feeds
    is its module's optimizers and those its inputs' graphs reach, so a GAN's discriminator run on the
    generator's output after the discriminator stepped is still that iteration (the generator's update
    is to come).
  "Without a DataLoader" includes a batch the script took once (`x, y = next(iter(loader))`) and
  iterates on itself: the iterator that gave the span its batch is gone.
* An optimizer step given a closure (LBFGS) while no iteration is open begins one: the step() call is the
  iteration, the forwards and backwards its closure runs are that step's.
  So a step is the batch the loop consumes, however many optimizer steps it makes: one, several, every k-th
  (accumulation) or none (a hand-written update).
* Time after a step boundary that is not the next iteration is an **outside** interval: it runs from the
  boundary to the start of the next training iteration (or the script's end) and is reported on its own,
  split into evaluation (forwards with grad disabled and batches of non-training passes), checkpoint
  (inside torch.save) and other (logging, schedulers, anything else).
* The sink's own work when a step ends (the launcher stops and starts a trace session there) is in neither
  the step nor what follows: that starts when the sink returns. The launcher reports that time itself.

Times are monotonic nanoseconds. Phases (forward, backward, optimizer) nest - LBFGS runs the forward and
backward inside its step - and each is counted exclusive of the phases inside it.

A hand-written update (no optimizer object) has no call to time: after a backward of a script that holds no
optimizer, an **update window** stays open until the next thing the tracker sees (a forward, a batch, a
backward, a save, the step's end). The hooks report what happens in it that updates parameters
(hooks/update.py: a clip_grad_norm_, a no_grad block that changed parameters, a parameter's `.data`
statement) as intervals; their union is the step's optimizer time. Nothing else runs in the window - the loss
read, a print - is counted.
"""

import weakref

from .spans import BACKWARD, FORWARD, OPTIM, SAVE, Outside, Sink, Span  # noqa: F401 (Sink: the interface)


def pass_length(loader):
    """Batches in a pass of `loader`, what len(DataLoader) says; 0 when it says nothing. Not asked of an
    IterableDataset's loader: asking makes torch warn once the dataset yields more than its length said."""
    if loader is None or any(c.__name__ == "IterableDataset" for c in type(getattr(loader, "dataset", None)).__mro__):
        return 0
    try:
        return max(0, int(len(loader)))
    except Exception:  # noqa: BLE001 - no length (a generator, a custom iterable): the pass is seen, not said
        return 0


class Iterations:
    def __init__(self, sink, clock, live_optimizers=lambda: ()):
        self.sink = sink
        self.clock = clock
        self.live_optimizers = live_optimizers  # () -> ids of the optimizers the script holds
        self.span = None
        self.outside = None
        self.steps = 0                # steps emitted
        self.serial = 0
        self.passes = 0               # training-loader passes that ended
        self.train_loaders = weakref.WeakSet()
        self.prev_cycle = None        # ids of the optimizers that stepped in the last step that stepped
        self.stack = []               # open phases: [phase, resume_ns, eval_outside_start or None]
        self.in_backward = 0
        self._boundary = None         # where the last fetch that opened a span ended a step (None: it did not)
        self.window = 0               # the open update window's number (0: none is open)
        self._windows = 0
        self.finished = False
        self.last_progress_ns = clock()
        self.began = False            # a training iteration has begun (training_began was said)
        self.last_batch = None        # (samples, unit, tokens) of the last step, for an iteration that shows none

    # --- spans ---------------------------------------------------------------------------------------------
    def _open(self, t0, loader):
        self.serial += 1
        sp = Span(self.serial, t0, loader)
        self.span = sp
        if self.stack:  # a phase already open (LBFGS's step before its closure's forward): only its rest is ours
            self.stack[-1][1] = max(self.stack[-1][1], t0)
        self.sink.span_opened(sp)
        return sp

    def _flush(self, t):
        """Charges the open phase's time so far to the current span (before the span changes)."""
        if self.stack:
            top = self.stack[-1]
            self._charge(top[0], t - top[1])
            top[1] = t

    def _charge(self, phase, dt):
        sp = self.span
        if sp is None or dt <= 0:
            if phase == SAVE and self.outside is not None and dt > 0:
                self.outside.checkpoint_ns += dt
            return
        if phase == FORWARD:
            sp.forward_ns += dt
        elif phase == BACKWARD:
            sp.backward_ns += dt
        elif phase == OPTIM:
            sp.optim_ns += dt
        elif phase == SAVE:
            sp.save_ns += dt

    def _close_step(self, t):
        """Ends the current span as a step at t. Returns the time the sink handed back: what follows (the next
        span, an outside interval, a phase) starts then, so that the launcher's own work at the boundary (a
        trace chunk's stop and start) is in no step and no outside interval."""
        sp = self.span
        self._close_window()
        self._flush(t)
        self.span = None
        if sp.updates:
            sp.optim_ns += sp.update_ns()
        if sp.stepped:
            self.prev_cycle = set(sp.stepped)
        if sp.samples:
            self.last_batch = (sp.samples, sp.unit, sp.tokens)
        i = self.steps
        self.steps += 1
        self.last_progress_ns = t
        sp.loader_pass = self.passes
        sp.loader_len = pass_length(sp.loader)
        self.sink.step(i, sp, t)
        t = self.clock()
        if self.stack:
            self.stack[-1][1] = max(self.stack[-1][1], t)
        return t

    def _close_untrained(self, t):
        """A span without a backward: validation or other work; it joins the outside interval."""
        sp = self.span
        self._flush(t)
        self.span = None
        self.sink.span_dropped(sp)
        if self.outside is None:
            if not sp.forwards and not sp.save_ns and self.steps == 0:
                return  # a batch read before training started: start-up, not reported
            self.outside = Outside(sp.t0, self.steps - 1 if self.steps else None)
        o = self.outside
        o.checkpoint_ns += sp.save_ns
        if sp.forwards:
            o.evaluation(sp.t0, t)

    def _start_outside(self, t, epoch=None):
        if self.outside is None:
            self.outside = Outside(t, self.steps - 1 if self.steps else None, epoch)

    def _confirm(self, sp):
        """The span is a training iteration: the outside interval before it ends where it began."""
        sp.trained = True
        if sp.loader is not None:
            self.train_loaders.add(sp.loader)
        if self.outside is not None:
            o, self.outside = self.outside, None
            self.sink.outside(o, sp.t0, "step")
        if not self.began:
            self.began = True
            self.sink.training_began(sp)

    @staticmethod
    def _loaderless(sp):
        """Does the iteration go on without a DataLoader: none gave it a batch, or the iterator that did is gone
        (`next(iter(loader))` once, the script looping over that batch itself)? Then its boundaries are the
        forward / backward / optimizer ones."""
        return sp.loader is None or (sp.held is not None and sp.held() is None)

    def _inherit(self, sp):
        """An iteration that shows no batch of its own (no DataLoader, no model call: a layer's forward called
        directly) works on the batch of the one before."""
        if not sp.samples and self.last_batch is not None:
            sp.samples, sp.unit, sp.tokens = self.last_batch

    @staticmethod
    def _feeds_stepped(sp, reaches):
        """Does a backward reach only parameters of optimizers that already stepped in this iteration (so it is
        the next iteration's)? `reaches`: () -> ids of the optimizers it reaches (None: unknown)."""
        if not sp.stepped or reaches is None:
            return False
        found = reaches()
        return bool(found) and found <= sp.stepped

    def _in_optimizer(self):
        return any(p[0] == OPTIM for p in self.stack)

    def _updates_done(self, sp):
        """Without a DataLoader: did this iteration make its updates (so the next forward is a new batch)?"""
        live = set(self.live_optimizers())
        if len(live) <= 1:
            return True
        need = self.prev_cycle if self.prev_cycle is not None else live
        return need <= sp.stepped

    def _open_window(self):
        """After a backward: a script without an optimizer may update its parameters by hand now."""
        sp = self.span
        if sp is None or not sp.trained or self.stack or self.window or list(self.live_optimizers()):
            return
        self._windows += 1
        self.window = self._windows
        self.sink.update_window(self.window)

    def _close_window(self):
        if self.window:
            self.window = 0
            self.sink.update_window(0)

    def _is_training_loader(self, loader):
        try:
            return loader in self.train_loaders
        except TypeError:
            return False

    # --- events --------------------------------------------------------------------------------------------
    def fetch_start(self, loader, t):
        """A batch is being requested from `loader` (t: the request, or the iterator's creation for its first
        batch). Returns the time the fetch's data wait counts from (later than t when a step was sent here:
        the launcher's own work belongs to no step)."""
        if self.finished:
            return t
        self._close_window()
        if self.outside is not None:
            self.sink.poll()
            if self.finished:
                return t
        sp = self.span
        boundary = None
        if sp is not None:
            if sp.trained:
                same = loader is sp.loader or self._is_training_loader(loader)
                t = self._close_step(t)
                boundary = t
                if not same:
                    self._start_outside(t)  # a batch of a loader that never trained: validation begins
            elif sp.forwards and loader is sp.loader:
                self._close_untrained(t)  # its previous batch was used without a backward
            else:
                return t  # a second batch in the same iteration (zip of loaders, next() twice)
        sp = self._open(t, loader)
        sp.fresh = True
        self._boundary = boundary
        return t

    def fetch_end(self, loader, t0, t1, samples, held=None):
        """held: () -> the iterator the batch came from, or None once it is gone (a weak reference to it)."""
        if self.finished:
            return
        sp = self.span
        if sp is None:
            sp = self._open(t0, loader)
        sp.fresh = False
        sp.data_wait_ns += max(0, t1 - t0)
        if loader is sp.loader:
            sp.samples += samples
            sp.held = held

    def pass_end(self, loader, t):
        """`loader`'s iterator ran out: the `for` loop over it is over."""
        if self.finished:
            return
        sp = self.span
        if sp is None or loader is not sp.loader:
            return
        if sp.fresh:
            # The span opened for the batch that did not come. If that request ended a training iteration,
            # the pass is over and what follows is outside time, from the step's end.
            self._flush(t)
            self.span = None
            self.sink.span_dropped(sp)
            if self._boundary is not None and self._is_training_loader(loader):
                self.passes += 1
                self._start_outside(self._boundary, epoch=self.passes)
            return
        if sp.trained:  # (the hooks always ask for the batch first; kept right without that too)
            t = self._close_step(t)
            self.passes += 1
            self._start_outside(t, epoch=self.passes)
            return
        self._close_untrained(t)

    def forward_start(self, grad_enabled, has_trained, samples, t, reaches=None):
        """The outermost forward of a module with trainable parameters. `has_trained`: this module has run a
        forward with grad enabled before (a validation forward is one of a model that trains; a frozen
        teacher's or a target network's is not). `samples`: its batch size, or a function that returns it
        (asked only when the step has no DataLoader). `reaches`: () -> ids of the optimizers this forward
        feeds (its parameters' and its inputs' graphs'), asked as backward_start's is. Returns True for the
        iteration's first forward with grad enabled: the one whose input batch_told() may then describe."""
        if self.finished or self.in_backward:
            return False  # activation checkpointing re-runs forwards inside the backward: that is backward time
        self._close_window()
        sp = self.span
        outside_eval = None
        if grad_enabled:
            if (sp is not None and sp.trained and self._loaderless(sp) and not self._in_optimizer()
                    and (self._updates_done(sp) or self._feeds_stepped(sp, reaches))):
                t = self._close_step(t)
                sp = None
            if sp is None:
                sp = self._open(t, None)
            if sp.loader is None and sp.train_forwards == 0:
                # without a DataLoader: the batch of the iteration's first model input (not one inherited)
                sp.samples = samples() if callable(samples) else samples
                sp.unit, sp.tokens = "samples", None
            sp.train_forwards += 1
        elif has_trained:
            if self.outside is not None:
                self.sink.poll()
                if self.finished:
                    return False
            if sp is not None and sp.trained:
                t = self._close_step(t)
                self._start_outside(t)
                sp = None
            if sp is None:
                self._start_outside(t)
                outside_eval = t
        if sp is not None:
            sp.forwards += 1
        self._push(FORWARD, t, outside_eval)
        return grad_enabled and sp.train_forwards == 1

    def span_serial(self):
        """The open span's number (0: none): the backward hooks ask whether a model forward was seen in it."""
        sp = self.span
        return sp.serial if sp is not None else 0

    def loader_samples(self):
        """The samples of the current iteration's DataLoader batch (None: it has no DataLoader)."""
        sp = self.span
        return sp.samples if sp is not None and sp.loader is not None else None

    def batch_told(self, samples, unit, tokens):
        """What the iteration's first training forward says its batch counts (batch_dim.decide): its samples,
        their unit and, for a sequence model, its tokens."""
        sp = self.span
        if sp is not None and not self.finished:
            sp.samples, sp.unit, sp.tokens = samples, unit, tokens

    def forward_end(self, t):
        if self.finished or self.in_backward:
            return
        entry = self._pop(FORWARD, t)
        if entry is not None and entry[2] is not None and self.outside is not None:
            self.outside.evaluation(entry[2], t)

    def backward_start(self, t, reaches=None):
        """reaches: () -> ids of the optimizers whose parameters this backward reaches (None: not known); asked
        only for a backward without a model call in its iteration, in an iteration that has stepped."""
        if self.finished:
            return
        self.in_backward += 1
        if self.in_backward > 1:
            return
        self._close_window()
        sp = self.span
        if (sp is not None and sp.trained and self._loaderless(sp) and sp.train_forwards == 0
                and not self._in_optimizer() and (self._updates_done(sp) or self._feeds_stepped(sp, reaches))):
            t = self._close_step(t)  # a model without nn.Module calls: the backward is all we see of a batch
            sp = None
        if sp is None:
            sp = self._open(t, None)
            self._inherit(sp)
        if not sp.trained:
            self._confirm(sp)
        self._push(BACKWARD, t)

    def backward_end(self, t):
        if self.finished or not self.in_backward:
            return
        self.in_backward -= 1
        if not self.in_backward:
            self._pop(BACKWARD, t)
            self.last_progress_ns = t
            self._open_window()

    def update_seen(self, window, t0, t1):
        """A sign of a hand-written update in update window `window`, from t0 to t1 (hooks/update.py); one
        from a window that has closed since (a forward ran inside a no_grad block: validation) is not."""
        sp = self.span
        if self.finished or not window or window != self.window or sp is None:
            return
        sp.add_update(max(t0, sp.t0), t1)

    def optimizer_start(self, opt_id, t, closure=False):
        """closure: the step() call was given one (LBFGS): it runs the iteration's forwards and backwards."""
        if self.finished:
            return
        self._close_window()
        sp = self.span
        if self._in_optimizer():
            pass
        elif sp is not None and sp.trained and self._loaderless(sp) and opt_id in sp.stepped:
            t = self._close_step(t)
            self._inherit(self._open(t, None))  # a new iteration begins with this step() call (a closure inside it)
        elif sp is None and closure:
            self._open(t, None)  # the step() call is the iteration: its closure's work before the first forward too
        if closure and self.span is not None:
            self.span.closure = True
        self._push(OPTIM, t)

    def optimizer_end(self, opt_id, t):
        if self.finished:
            return
        self._pop(OPTIM, t)
        sp = self.span
        if sp is not None:
            sp.stepped.add(opt_id)
            sp.optimizer_steps += 1

    def save_start(self, t):
        if self.finished:
            return
        self._close_window()
        sp = self.span
        if sp is not None and sp.trained:
            t = self._close_step(t)
            self._start_outside(t)
        self._push(SAVE, t)

    def save_end(self, t):
        if self.finished:
            return
        self._pop(SAVE, t)

    def finish(self, t):
        """The script ended (or is being ended): the iteration in progress is a step if it trained; an outside
        interval in progress ends here."""
        if self.finished:
            return
        self._close_window()
        sp = self.span
        if sp is not None:
            if sp.trained:
                t = self._close_step(t)
            elif sp.train_forwards and sp.train_forwards == sp.forwards:
                # An iteration cut short before its backward (the script raised, or exited, in it): neither
                # a step nor time outside one.
                self._flush(t)
                self.span = None
                self.sink.span_dropped(sp)
            else:
                self._close_untrained(t)
        if self.outside is not None:
            o, self.outside = self.outside, None
            self.sink.outside(o, t, "exit")
        self.finished = True

    # --- phase stack ---------------------------------------------------------------------------------------
    def _push(self, phase, t, extra=None):
        self._flush(t)
        self.stack.append([phase, t, extra])

    def _pop(self, phase, t):
        """Closes the innermost `phase` (and anything left open inside it by an exception)."""
        stack = self.stack
        if stack and stack[-1][0] == phase:  # the usual case
            entry = stack.pop()
            self._charge(phase, t - entry[1])
            if stack:
                stack[-1][1] = t
            return entry
        if not any(p[0] == phase for p in stack):
            return None
        while self.stack:
            entry = self.stack.pop()
            self._charge(entry[0], t - entry[1])
            if entry[0] == phase:
                if self.stack:
                    self.stack[-1][1] = t
                return entry
        return None
