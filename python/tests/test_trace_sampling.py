"""A sampled trace (the launcher's default, --trace-share 0.01): chunks of at most --trace-every steps, each as
long as keeps its stop within a step (at least 3 steps), with untraced steps between them, as many as keep
TuneBench's pauses under the share of the run. The script shape that paid most for a continuous trace: ~1 ms steps
without a DataLoader, whose chunk boundaries took 45.6% of its window.

What holds on any machine is tested here, with a share of 10% (gaps of tens of steps, so a short run has several
chunks): untraced steps between the chunks, marked in the chunk after them; each step says whether it was traced,
exactly the chunks' steps; a pause is between two steps, never inside one; a chunk holds MIN_CHUNK to
--trace-every steps. What it costs (the share met, how long the chunks grow, the first start's time) depends on
the machine: bench/bench_watch_tax.py prints it."""

import os
import textwrap
import unittest

from tests.launch_util import Child, ScriptTest, step_ranges, tunebench_events
from tunebench.trace.tracer import MIN_CHUNK

EVERY = 20
SHARE = 0.1

# A small regression, as people write it: no DataLoader, a step of a millisecond or two.
FAST_STEPS = textwrap.dedent('''
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(6)])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 16), torch.randn(64, 16)
    for step in range(100000):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
''')

# An MNIST-sized classifier through a DataLoader (shuffled, in the main process), Adam: steps of a few ms.
LOADER_STEPS = textwrap.dedent('''
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    torch.set_num_threads(1)
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.rand(2048, 1, 28, 28), torch.randint(0, 10, (2048,))), batch_size=32,
                        shuffle=True)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(100):
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
''')


class Sampled(ScriptTest):
    """Runs self.script under the launcher, sampled: chunks of up to EVERY steps under SHARE."""

    def run_traced(self, steps):
        tdir = os.path.join(self.dir.name, "trace")
        c = Child(self.script, launcher_args=["--steps", str(steps), "--trace-dir", tdir, "--trace-every", str(EVERY),
                                              "--trace-share", str(SHARE)])
        code, _, err = c.finish(timeout=300)
        self.assertEqual(code, 0, err)
        steps = [m for m in c.messages if m["type"] == "step"]
        chunks = [m for m in c.messages if m["type"] == "trace"]
        spans = [(m["first_step"], m["last_step"]) for m in chunks]
        self.assertGreaterEqual(len(spans), 2, spans)
        for a, b in zip(spans, spans[1:]):
            self.assertGreater(b[0], a[1] + 1, spans)  # untraced steps between them
        # Each chunk as long as its rule says (the last one perhaps cut by the run's end); the first, planned
        # before anything was measured, is the shortest a chunk gets.
        lengths = [b - a + 1 for a, b in spans]
        self.assertEqual(lengths[0], MIN_CHUNK, spans)
        self.assertTrue(all(MIN_CHUNK <= n <= EVERY for n in lengths[:-1]), spans)
        self.assertTrue(1 <= lengths[-1] <= EVERY, spans)
        # Each step says whether it ran inside a chunk (the parent's figures leave the traced ones out).
        self.assertEqual([s["i"] for s in steps if s["traced"]], [i for a, b in spans for i in range(a, b + 1)])
        # Each pause (what the GUI and analyze state in median steps beside the share) is one step's profiler_ns,
        # between two steps and never inside one: the steps' figures do not hold it.
        for a, b in zip(steps, steps[1:]):
            self.assertGreaterEqual(b["t_ns"] - (a["t_ns"] + a["wall_ns"]), b["profiler_ns"], (a, b))
        # A pause before each chunk's first step (its start) and the step after its last one (its stop).
        self.assertEqual([s["i"] for s in steps[1:] if s["profiler_ns"]],
                         sorted([a for a, _ in spans[1:]] + [b + 1 for _, b in spans if b + 1 < len(steps)]))
        return steps, chunks


class TraceSampling(Sampled):
    SCRIPT_TEXT = FAST_STEPS

    def test_a_fast_script_leaves_untraced_steps_between_its_chunks_and_marks_them(self):
        steps, chunks = self.run_traced(400)
        self.assertEqual(len(steps), 400)
        # Each later chunk says where the untraced steps were: after the last traced step of the chunk before
        # it, before its own first step, on the training thread's row.
        for k in range(1, len(chunks)):
            untraced = [e for e in tunebench_events(chunks[k]["path"]) if e["name"] == "TuneBench: untraced steps"]
            self.assertEqual(len(untraced), 1, untraced)
            e = untraced[0]
            before = step_ranges(chunks[k - 1]["path"])[chunks[k - 1]["last_step"]]
            after = step_ranges(chunks[k]["path"])[chunks[k]["first_step"]]
            self.assertGreaterEqual(e["ts"], before[1] - 1000)
            self.assertLessEqual(e["ts"] + e["dur"], after[0] + 1000)
            # It holds the untraced steps' time (at least theirs: from the stop's end to the next start).
            gap_steps = [s for s in steps if chunks[k - 1]["last_step"] < s["i"] < chunks[k]["first_step"]]
            self.assertGreaterEqual(e["dur"] * 1000, sum(s["wall_ns"] for s in gap_steps) * 0.9)
        # The untraced steps are no pause of TuneBench's: the steps after a gap carry only the next start.
        self.assertTrue(all(e["name"] != "TuneBench: untraced steps" or e["args"]["what"] == "untraced steps"
                            for m in chunks for e in tunebench_events(m["path"])))


class TraceSamplingLoader(Sampled):
    SCRIPT_TEXT = LOADER_STEPS

    def test_a_loader_script_pauses_only_between_steps(self):
        steps, chunks = self.run_traced(300)
        self.assertEqual(len(steps), 300)
        self.assertTrue(all(s["samples"] == 32 for s in steps))
        # share 0 traces every step, one chunk after another: test_launch_trace.py


if __name__ == "__main__":
    unittest.main()
