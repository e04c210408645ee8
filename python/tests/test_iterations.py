"""The step rule (tunebench/iterations.py) on event sequences written by hand: the shapes of real training
loops, with a clock the test moves (1 unit = 1 ns), so every boundary and phase time is exact."""

import unittest
import weakref

from tunebench.iterations import Iterations, Sink, Span


class Loader:
    """Stands for a DataLoader (the tracker only needs identity and weak references)."""


class Iterator:
    """Stands for a DataLoader's iterator: the tracker holds a weak reference to it."""


class Recorder(Sink):
    def __init__(self):
        self.steps = []
        self.outsides = []
        self.dropped = 0
        self.windows = []  # update_window() calls: a window's number, 0 when it closed
        self.began = []    # training_began(): the first training iteration's start

    def step(self, i, span, end_ns):
        self.steps.append(dict(i=i, t0=span.t0, end=end_ns, samples=span.samples, data_wait=span.data_wait_ns,
                               forward=span.forward_ns, backward=span.backward_ns, optim=span.optim_ns,
                               optimizer_steps=span.optimizer_steps, unit=span.unit, tokens=span.tokens,
                               evaluations=span.evaluations()))

    def update_window(self, serial):
        self.windows.append(serial)

    def outside(self, o, end_ns, until):
        ev, ck, other = o.parts(end_ns)
        self.outsides.append(dict(t0=o.t0, end=end_ns, after=o.after_step, epoch=o.epoch, evaluation=ev,
                                 checkpoint=ck, other=other, until=until))

    def span_dropped(self, span):
        self.dropped += 1

    def training_began(self, span):
        self.began.append(span.t0)


class Loop:
    """Drives the tracker like the hooks do, advancing the clock by the duration of each phase."""

    def __init__(self, optimizers=(1,)):
        self.t = 0
        self.rec = Recorder()
        self.optimizers = list(optimizers)
        self.it = Iterations(self.rec, lambda: self.t, lambda: self.optimizers)

    def wait(self, dt):
        self.t += dt

    def fetch(self, loader, n=8, dt=2, held=None):
        t0 = self.it.fetch_start(loader, self.t)
        self.t += dt
        self.it.fetch_end(loader, t0, self.t, n, held)

    def end_of(self, loader, dt=1):
        """The loop asks for a batch and the iterator raises StopIteration."""
        t = self.it.fetch_start(loader, self.t)
        self.t += dt
        self.it.pass_end(loader, t)

    def forward(self, grad=True, trained=True, n=8, dt=10, reaches=None):
        """reaches: the optimizers the forward feeds (its module's, and those its inputs' graphs reach)."""
        self.it.forward_start(grad, trained, n, self.t, None if reaches is None else lambda: set(reaches))
        self.t += dt
        self.it.forward_end(self.t)

    def backward(self, dt=20, reaches=None):
        """reaches: the optimizers whose parameters the backward reaches (what hooks_forward walks the graph
        for, asked only without a model call in the iteration)."""
        self.it.backward_start(self.t, None if reaches is None else lambda: set(reaches))
        self.t += dt
        self.it.backward_end(self.t)

    def step(self, opt=1, dt=5, inside=None, closure=False):
        self.it.optimizer_start(opt, self.t, closure)
        if inside:
            inside()
        self.t += dt
        self.it.optimizer_end(opt, self.t)

    def save(self, dt=30):
        self.it.save_start(self.t)
        self.t += dt
        self.it.save_end(self.t)

    def train_batch(self, loader, opt=1):
        self.fetch(loader)
        self.forward()
        self.backward()
        self.step(opt)
        self.wait(3)  # loss.item(), a print: still the step's

    def finish(self):
        self.it.finish(self.t)
        return self.rec


class StepRuleTest(unittest.TestCase):
    def test_a_loader_loop_makes_one_step_per_batch_and_the_epoch_end_is_outside(self):
        lp, train, val = Loop(), Loader(), Loader()
        for epoch in range(2):
            for _ in range(3):
                lp.train_batch(train)
            lp.end_of(train)
            for _ in range(2):  # validation: no_grad forwards over another loader
                lp.fetch(val, dt=4)
                lp.forward(grad=False, dt=50)
                lp.wait(6)
            lp.end_of(val)
            lp.save(dt=30)
            lp.wait(7)  # scheduler.step(), logging
        rec = lp.finish()
        self.assertEqual(len(rec.steps), 6)
        for s in rec.steps:
            self.assertEqual(s["end"] - s["t0"], 2 + 10 + 20 + 5 + 3)  # fetch, forward, backward, step, tail
            self.assertEqual((s["samples"], s["data_wait"], s["forward"], s["backward"], s["optim"]),
                             (8, 2, 10, 20, 5))
        self.assertEqual([(o["after"], o["epoch"], o["until"]) for o in rec.outsides], [(2, 1, "step"), (5, 2, "exit")])
        o = rec.outsides[0]
        self.assertEqual(o["t0"], rec.steps[2]["end"])
        self.assertEqual(o["end"], rec.steps[3]["t0"])
        self.assertEqual(o["end"] - o["t0"], 1 + 2 * (4 + 50 + 6) + 1 + 30 + 7)
        self.assertEqual(o["checkpoint"], 30)
        self.assertEqual(o["evaluation"], 2 * (4 + 50 + 6))  # from the first validation batch to its pass end
        self.assertEqual(o["other"], 1 + 1 + 7)

    def test_gradient_accumulation_every_batch_is_a_step(self):
        lp, train = Loop(), Loader()
        for i in range(8):
            lp.fetch(train)
            lp.forward()
            lp.backward()
            if i % 4 == 3:
                lp.step()
        rec = lp.finish()
        self.assertEqual([s["optimizer_steps"] for s in rec.steps], [0, 0, 0, 1, 0, 0, 0, 1])
        self.assertTrue(all(s["samples"] == 8 for s in rec.steps))

    def test_two_optimizers_per_batch_are_one_step(self):
        lp, data = Loop(optimizers=(1, 2)), Loader()
        for _ in range(4):  # D: two forwards, two backwards, step; G: forward, backward, step
            lp.fetch(data, n=16)
            lp.forward()
            lp.backward()
            lp.forward()
            lp.forward()
            lp.backward()
            lp.step(1)
            lp.forward()
            lp.backward()
            lp.step(2)
        rec = lp.finish()
        self.assertEqual(len(rec.steps), 4)
        self.assertTrue(all(s["samples"] == 16 and s["optimizer_steps"] == 2 and s["forward"] == 40
                            and s["backward"] == 60 and s["optim"] == 10 for s in rec.steps), rec.steps)

    def test_without_a_loader_a_forward_after_the_update_starts_the_next_step(self):
        lp = Loop()
        for _ in range(5):
            lp.wait(4)  # slicing the batch
            lp.forward(n=24)
            lp.backward()
            lp.step()
        rec = lp.finish()
        self.assertEqual(len(rec.steps), 5)
        self.assertTrue(all(s["samples"] == 24 for s in rec.steps))
        for a, b in zip(rec.steps, rec.steps[1:]):
            self.assertEqual(a["end"], b["t0"])

    def test_without_a_loader_two_optimizers_wait_for_both_updates(self):
        lp = Loop(optimizers=(1, 2))
        for _ in range(3):  # actor-critic: rollout forwards of both nets, then each update
            for _ in range(4):
                lp.forward(n=1)
                lp.forward(n=1)
            lp.backward()
            lp.step(1)
            lp.backward()
            lp.step(2)
        rec = lp.finish()
        self.assertEqual(len(rec.steps), 3)
        self.assertTrue(all(s["optimizer_steps"] == 2 and s["forward"] == 80 for s in rec.steps))

    def test_a_hand_written_update_without_optimizers(self):
        lp = Loop(optimizers=())
        for _ in range(4):
            lp.forward()
            lp.backward()
            lp.wait(5)  # p -= lr * p.grad under no_grad
        rec = lp.finish()
        self.assertEqual([s["optimizer_steps"] for s in rec.steps], [0, 0, 0, 0])

    def test_a_hand_written_updates_signs_are_its_optimizer_time_and_nothing_between_them(self):
        lp = Loop(optimizers=())
        for _ in range(3):
            lp.forward()
            lp.backward()
            window = lp.it.window
            self.assertEqual(lp.rec.windows[-1], window)  # opened at the backward's end
            t_block = lp.t
            lp.wait(1)
            clip = lp.t
            lp.wait(4)
            lp.it.update_seen(window, clip, lp.t)  # clip_grad_norm_
            for _ in range(3):  # p.data.add_(p.grad, alpha=-lr): from the .data read to its release
                lp.wait(1)      # the loop's own code between parameters
                t0 = lp.t
                lp.wait(2)
                lp.it.update_seen(window, t0, lp.t)
            lp.it.update_seen(window, clip + 1, clip + 3)  # inside the clip: counted once
            lp.wait(3)  # loss.item(), a print: not the update
            if window % 2:  # the same, wrapped in a no_grad block that changed parameters: all of it counts
                lp.it.update_seen(window, t_block, lp.t - 3)
        lp.forward()  # the next iteration begins: the window closes
        lp.it.update_seen(window, 0, lp.t)  # a sign from a window that has closed (a no_grad validation) is not
        rec = lp.finish()
        self.assertEqual(rec.windows, [1, 0, 2, 0, 3, 0])
        self.assertEqual([s["optim"] for s in rec.steps], [1 + 4 + 3 * 3, 4 + 3 * 2, 1 + 4 + 3 * 3])
        for s in rec.steps:
            self.assertEqual(s["end"] - s["t0"], 10 + 20 + 1 + 4 + 3 * 3 + 3)

    def test_update_signs_are_kept_as_their_union_in_any_order(self):
        sp = Span(1, 0, None)
        for a, b in [(10, 12), (20, 22), (5, 8)]:
            sp.add_update(a, b)
        self.assertEqual((sp.updates, sp.update_ns()), ([[5, 8], [10, 12], [20, 22]], 7))
        sp.add_update(11, 21)
        self.assertEqual((sp.updates, sp.update_ns()), ([[5, 8], [10, 22]], 15))
        sp.add_update(0, 30)
        self.assertEqual((sp.updates, sp.update_ns()), ([[0, 30]], 30))

    def test_no_update_window_with_an_optimizer_or_outside_an_iteration(self):
        lp, train = Loop(), Loader()
        lp.train_batch(train)
        lp.it.update_seen(1, 0, lp.t)
        rec = lp.finish()
        self.assertEqual(rec.windows, [])
        self.assertEqual(rec.steps[0]["optim"], 5)

    def test_the_first_training_forward_tells_the_batch(self):
        lp, train = Loop(optimizers=()), Loader()
        first = lp.it.forward_start(True, True, 35, lp.t)
        self.assertTrue(first)
        self.assertIsNone(lp.it.loader_samples())  # no DataLoader: the rule has only the model's input
        lp.it.forward_end(lp.t)
        lp.it.batch_told(20, "sequences", 700)
        self.assertFalse(lp.it.forward_start(True, True, 35, lp.t))  # a second forward in the iteration
        lp.it.forward_end(lp.t)
        lp.backward()
        lp.fetch(train, n=12)
        self.assertEqual(lp.it.loader_samples(), 12)
        rec = lp.finish()
        self.assertEqual([(s["samples"], s["unit"], s["tokens"]) for s in rec.steps], [(20, "sequences", 700)])

    def test_a_closure_optimizer_is_one_step_per_call(self):
        lp = Loop()

        def closure_evaluations():
            lp.wait(4)  # the optimizer's own work before it calls the closure
            for _ in range(3):
                lp.forward()
                lp.backward()

        for _ in range(4):
            lp.step(dt=5, inside=closure_evaluations)
        rec = lp.finish()
        self.assertEqual(len(rec.steps), 4)
        for s in rec.steps:  # each phase exclusive of the ones inside it
            self.assertEqual((s["forward"], s["backward"]), (30, 60))
            self.assertLessEqual(s["forward"] + s["backward"] + s["optim"], s["end"] - s["t0"])
        # the first step begins at the closure's first forward (nothing before it showed a step); the next
        # ones at their step() call
        self.assertEqual([s["optim"] for s in rec.steps], [5, 9, 9, 9])

    def test_a_closure_step_call_is_the_step_from_its_start(self):
        # LBFGS's step(closure) after an evaluation between steps: the step() call is the iteration, its own
        # work before the closure's first forward included; the closure's forward and backward are the
        # step's, each counted once.
        lp = Loop()

        def closure_evaluations():
            lp.wait(4)
            for _ in range(3):
                lp.forward()
                lp.backward()

        for _ in range(3):
            t_call = lp.t
            lp.step(dt=5, inside=closure_evaluations, closure=True)
            lp.wait(2)  # print(loss)
            lp.forward(grad=False, dt=40)  # the prediction under no_grad
            self.assertEqual(lp.rec.steps[-1]["t0"], t_call)
        rec = lp.finish()
        self.assertEqual([(s["forward"], s["backward"], s["optim"]) for s in rec.steps], [(30, 60, 9)] * 3)
        self.assertEqual([s["evaluations"] for s in rec.steps], [3] * 3)  # the closure's, once a forward each
        for s in rec.steps:
            self.assertEqual(s["end"] - s["t0"], 4 + 3 * 30 + 5 + 2)
        self.assertEqual([(o["after"], o["evaluation"]) for o in rec.outsides], [(0, 40), (1, 40), (2, 40)])
        self.assertEqual(rec.began, [0])  # said once, at the first iteration's start

    def test_forward_forward_layers_each_with_its_loss_backward_and_optimizer(self):
        # One batch taken with next(iter(loader)) (its iterator gone at once), then each layer trains on it in
        # turn: its own forward called directly (no model call seen), its loss, backward and Adam. Every
        # [backward, step] is an iteration: the second layer's optimizer not having stepped yet does not make
        # the first layer's iterations one.
        lp, train = Loop(optimizers=(1, 2)), Loader()
        it = Iterator()
        lp.fetch(train, n=256, dt=9, held=weakref.ref(it))
        del it
        for opt in (1, 2):
            for _ in range(4):
                lp.wait(6)  # the layer's forward, called directly, and the loss
                lp.backward(reaches={opt})
                lp.step(opt)
                lp.wait(1)  # print
        rec = lp.finish()
        self.assertEqual(len(rec.steps), 8)
        self.assertEqual([s["optimizer_steps"] for s in rec.steps], [1] * 8)
        self.assertEqual([s["samples"] for s in rec.steps], [256] * 8)  # the batch they all train on
        self.assertEqual([s["evaluations"] for s in rec.steps], [0] * 8)  # no closure: nothing to count
        self.assertEqual([(s["backward"], s["optim"]) for s in rec.steps], [(20, 5)] * 8)
        # A step begins at its backward, the first thing of it seen: the unseen forward before it ends the
        # step before (the first one holds the batch's fetch and its own forward)
        self.assertEqual([s["end"] - s["t0"] for s in rec.steps], [9 + 6 + 20 + 5 + 1 + 6] + [20 + 5 + 1 + 6] * 6 +
                         [20 + 5 + 1])

    def test_forward_forward_through_the_layers_call(self):
        # The same trainer calling `layer(x)`: the forward is seen, and it begins the iteration.
        lp, train = Loop(optimizers=(1, 2)), Loader()
        it = Iterator()
        lp.fetch(train, n=256, dt=9, held=weakref.ref(it))
        del it
        for opt in (1, 2):
            for _ in range(4):
                lp.forward(n=256, reaches={opt})  # positive data
                lp.forward(n=256, reaches={opt})  # negative data
                lp.wait(2)  # the loss
                lp.backward()
                lp.step(opt)
                lp.wait(1)
        rec = lp.finish()
        self.assertEqual([(s["forward"], s["backward"], s["optim"], s["optimizer_steps"]) for s in rec.steps],
                         [(20, 20, 5, 1)] * 8)
        self.assertEqual([s["end"] - s["t0"] for s in rec.steps], [9 + 48] + [48] * 7)

    def test_a_gans_discriminator_on_the_generators_output_is_the_same_iteration(self):
        # Without a DataLoader: G makes a sample, D steps on real and fake (detached), then G's loss runs D on
        # the fake again. D has stepped, but that forward also feeds G (its input's graph reaches G): no new
        # iteration until G's next sample.
        lp = Loop(optimizers=("D", "G"))
        for _ in range(3):
            lp.forward(reaches={"G"})
            lp.forward(reaches={"D"})
            lp.forward(reaches={"D"})
            lp.backward()
            lp.step("D")
            lp.forward(reaches={"D", "G"})
            lp.backward()
            lp.step("G")
        rec = lp.finish()
        self.assertEqual([(s["forward"], s["optimizer_steps"]) for s in rec.steps], [(40, 2)] * 3)

    def test_a_batch_the_loop_still_holds_is_one_step_however_many_updates(self):
        # The same two-layer loop over a DataLoader's batches (a `for` holds the iterator): a step per batch.
        lp, train = Loop(optimizers=(1, 2)), Loader()
        it = Iterator()
        for _ in range(3):
            lp.fetch(train, n=32, held=weakref.ref(it))
            for opt in (1, 2):
                lp.backward(reaches={opt})
                lp.step(opt)
        rec = lp.finish()
        self.assertEqual([s["optimizer_steps"] for s in rec.steps], [2, 2, 2])

    def test_a_gan_of_plain_tensors_is_one_step_per_round(self):
        # No model call seen at all: D's loss reaches D's parameters only (G's sample detached), G's loss
        # reaches both through D: G's backward is not a new iteration although D has stepped.
        lp = Loop(optimizers=("D", "G"))
        for _ in range(3):
            lp.backward(reaches={"D"})
            lp.step("D")
            lp.backward(reaches={"D", "G"})
            lp.step("G")
        rec = lp.finish()
        self.assertEqual([s["optimizer_steps"] for s in rec.steps], [2, 2, 2])

    def test_a_training_loader_used_for_evaluation_is_outside(self):
        lp, train = Loop(), Loader()
        for _ in range(2):
            lp.train_batch(train)
        lp.end_of(train)
        for _ in range(3):  # accuracy on the training set, under no_grad
            lp.fetch(train)
            lp.forward(grad=False, dt=40)
        lp.end_of(train)
        lp.train_batch(train)
        rec = lp.finish()
        self.assertEqual(len(rec.steps), 3)
        self.assertEqual(rec.outsides[0]["after"], 1)
        self.assertGreaterEqual(rec.outsides[0]["evaluation"], 3 * 40)

    def test_a_validation_inside_the_epoch_ends_the_step_where_it_begins(self):
        lp, train = Loop(), Loader()
        lp.train_batch(train)
        lp.train_batch(train)
        t_val = lp.t
        lp.forward(grad=False, dt=100)  # `if i % 100 == 0: evaluate()` without a loader
        lp.train_batch(train)
        rec = lp.finish()
        self.assertEqual(rec.steps[1]["end"], t_val)
        self.assertEqual(rec.outsides[0]["t0"], t_val)
        self.assertEqual(rec.outsides[0]["end"], rec.steps[2]["t0"])
        self.assertEqual(rec.outsides[0]["evaluation"], 100)
        self.assertIsNone(rec.outsides[0]["epoch"])

    def test_a_frozen_teachers_forward_is_not_evaluation(self):
        lp, train = Loop(), Loader()
        for _ in range(3):
            lp.fetch(train)
            lp.forward(grad=False, trained=False)  # the teacher, under no_grad
            lp.forward()
            lp.backward()
            lp.step()
        rec = lp.finish()
        self.assertEqual(len(rec.steps), 3)
        self.assertEqual(rec.outsides, [])

    def test_an_iteration_cut_before_its_backward_is_neither_step_nor_outside(self):
        lp, train = Loop(), Loader()
        lp.train_batch(train)
        lp.fetch(train)
        lp.forward()  # and the script raises here
        rec = lp.finish()
        self.assertEqual(len(rec.steps), 1)
        self.assertEqual(rec.outsides, [])

    def test_a_checkpoint_mid_epoch_is_outside(self):
        lp, train = Loop(), Loader()
        lp.train_batch(train)
        lp.save(dt=50)
        lp.train_batch(train)
        rec = lp.finish()
        self.assertEqual(len(rec.steps), 2)
        self.assertEqual((rec.outsides[0]["checkpoint"], rec.outsides[0]["evaluation"]), (50, 0))

    def test_a_forward_inside_a_backward_is_not_a_new_step(self):
        lp = Loop()
        lp.forward()
        lp.it.backward_start(lp.t)
        lp.forward(dt=7)  # activation checkpointing re-runs the forward
        lp.t += 13
        lp.it.backward_end(lp.t)
        lp.step()
        rec = lp.finish()
        self.assertEqual(len(rec.steps), 1)
        self.assertEqual((rec.steps[0]["forward"], rec.steps[0]["backward"]), (10, 20))

    def test_the_sinks_work_at_a_step_boundary_is_in_no_step_and_no_outside_interval(self):
        # The launcher stops and starts a trace session when a step ends (P units here): that time is its
        # own, whatever ends the step - the next batch, the pass's end, a validation forward, a save, the
        # next forward without a loader.
        P = 1000

        def pausing(lp):
            step = lp.rec.step

            def step_and_pause(i, span, end_ns):
                step(i, span, end_ns)
                lp.t += P
            lp.rec.step = step_and_pause
            return lp

        lp, train, val = pausing(Loop()), Loader(), Loader()
        for _ in range(3):
            lp.train_batch(train)
        lp.end_of(train)
        lp.fetch(val, dt=4)
        lp.forward(grad=False, dt=50)
        lp.end_of(val)
        lp.train_batch(train)
        lp.forward(grad=False, dt=50)  # a validation forward right after the step
        lp.wait(6)
        lp.train_batch(train)
        lp.save(dt=30)  # a checkpoint right after the step
        rec = lp.finish()
        self.assertEqual([s["end"] - s["t0"] for s in rec.steps], [40] * 5)
        self.assertEqual([b["t0"] - a["end"] for a, b in zip(rec.steps, rec.steps[1:3])], [P, P])
        self.assertEqual([(o["t0"] - rec.steps[o["after"]]["end"], o["end"] - o["t0"]) for o in rec.outsides],
                         [(P, 1 + 4 + 50 + 1), (P, 50 + 6), (P, 30)])
        self.assertEqual([(o["evaluation"], o["checkpoint"]) for o in rec.outsides], [(4 + 50, 0), (50, 0), (0, 30)])

        lp = pausing(Loop())  # without a DataLoader: the next forward ends the step
        for _ in range(3):
            lp.forward()
            lp.backward()
            lp.step()
        rec = lp.finish()
        self.assertEqual([s["end"] - s["t0"] for s in rec.steps], [35] * 3)
        self.assertEqual([b["t0"] - a["end"] for a, b in zip(rec.steps, rec.steps[1:])], [P, P])
        self.assertEqual([(s["forward"], s["backward"], s["optim"]) for s in rec.steps], [(10, 20, 5)] * 3)


if __name__ == "__main__":
    unittest.main()
