"""The step rule (tunebench/iterations.py) on event sequences written by hand: the shapes of real training
loops, with a clock the test moves (1 unit = 1 ns), so every boundary and phase time is exact."""

import unittest

from tunebench.iterations import Iterations, Sink


class Loader:
    """Stands for a DataLoader (the tracker only needs identity and weak references)."""


class Recorder(Sink):
    def __init__(self):
        self.steps = []
        self.outsides = []
        self.dropped = 0

    def step(self, i, span, end_ns):
        self.steps.append(dict(i=i, t0=span.t0, end=end_ns, samples=span.samples, data_wait=span.data_wait_ns,
                               forward=span.forward_ns, backward=span.backward_ns, optim=span.optim_ns,
                               optimizer_steps=span.optimizer_steps))

    def outside(self, o, end_ns, until):
        ev, ck, other = o.parts(end_ns)
        self.outsides.append(dict(t0=o.t0, end=end_ns, after=o.after_step, epoch=o.epoch, evaluation=ev,
                                 checkpoint=ck, other=other, until=until))

    def span_dropped(self, span):
        self.dropped += 1


class Loop:
    """Drives the tracker like the hooks do, advancing the clock by the duration of each phase."""

    def __init__(self, optimizers=(1,)):
        self.t = 0
        self.rec = Recorder()
        self.optimizers = list(optimizers)
        self.it = Iterations(self.rec, lambda: self.t, lambda: self.optimizers)

    def wait(self, dt):
        self.t += dt

    def fetch(self, loader, n=8, dt=2):
        t0 = self.it.fetch_start(loader, self.t)
        self.t += dt
        self.it.fetch_end(loader, t0, self.t, n)

    def end_of(self, loader, dt=1):
        """The loop asks for a batch and the iterator raises StopIteration."""
        t = self.it.fetch_start(loader, self.t)
        self.t += dt
        self.it.pass_end(loader, t)

    def forward(self, grad=True, trained=True, n=8, dt=10):
        self.it.forward_start(grad, trained, n, self.t)
        self.t += dt
        self.it.forward_end(self.t)

    def backward(self, dt=20):
        self.it.backward_start(self.t)
        self.t += dt
        self.it.backward_end(self.t)

    def step(self, opt=1, dt=5, inside=None):
        self.it.optimizer_start(opt, self.t)
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


if __name__ == "__main__":
    unittest.main()
