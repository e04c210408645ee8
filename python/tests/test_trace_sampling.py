"""A sampled trace (the launcher's default, --trace-share 0.01): chunks of at most --trace-every steps, each as
long as keeps its stop within a step (at least 3 steps), with untraced steps between them, as many as keep
TuneBench's pauses under the share of the run. The script shape that paid most for a continuous trace: ~1 ms steps
without a DataLoader, whose chunk boundaries took 45.6% of its window.

What holds on any machine is tested here, with a share of 10% (gaps of tens of steps here; a run goes on until it
has several chunks, however many steps a busy machine's gaps take): untraced steps between the chunks, marked in
the chunk after them; each step says whether it was traced, exactly the chunks' steps; a pause is between two
steps, never inside one; a chunk holds MIN_CHUNK to --trace-every steps. What it costs (the share met, how long
the chunks grow, the first start's time) depends on the machine: bench/bench_watch_tax.py prints it.

A detail quota (--trace-steps K) is a count, which holds on any machine: at least K traced steps where the run
makes that many, spread over a run of known length, at least every other step until held where the length is not
known; K 0 is the share alone (the tests above)."""

import json
import os
import random
import textwrap
import unittest

from tests.launch_util import Child, ScriptTest, step_ranges, tunebench_events
from tunebench.trace.tracer import MIN_CHUNK, quota_gap

EVERY = 20
SHARE = 0.1
# The most steps of a run stopped after its chunks (Sampled.run_traced): ~3 ms each at most here.
STEPS_MOST = 20000

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

    def run_sampled(self, steps=0, launcher_args=(), args=(), share=SHARE, stop_after_chunks=0):
        """The step and trace messages of a sampled run of `steps` (0: to the script's end), checked for what
        every sampled trace holds: (steps, chunks, [(first, last) of each chunk]). stop_after_chunks N: the run
        is stopped (a `stop`) once N chunks have ended, `steps` only its most."""
        tdir = os.path.join(self.dir.name, "trace")
        run_args = ["--steps", str(steps)] if steps else []
        c = Child(self.script, args, run_args + ["--trace-dir", tdir, "--trace-every", str(EVERY),
                                                 "--trace-share", str(share)] + list(launcher_args),
                  with_input=stop_after_chunks > 0)
        if stop_after_chunks:
            # A chunk has ended at the first untraced step after a traced one.
            ended, was_traced = 0, False
            while ended < stop_after_chunks:
                m = c.until(lambda m: m["type"] in ("step", "done"), timeout=300)
                if m is None or m["type"] == "done":
                    break
                ended += was_traced and not m["traced"]
                was_traced = m["traced"]
            if m is not None and m["type"] == "step":
                c.send(type="stop")
        code, _, err = c.finish(timeout=300)
        self.assertEqual(code, 0, err)
        self.messages = c.messages
        steps = [m for m in c.messages if m["type"] == "step"]
        chunks = [m for m in c.messages if m["type"] == "trace"]
        spans = [(m["first_step"], m["last_step"]) for m in chunks]
        self.assertGreaterEqual(len(spans), 2, spans)
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
        # A pause before each chunk's first step (its start) and the step after its last one (its stop): one
        # step's where two chunks follow one another.
        self.assertEqual([s["i"] for s in steps[1:] if s["profiler_ns"]],
                         sorted({a for a, _ in spans if a > 0} | {b + 1 for _, b in spans if b + 1 < len(steps)}))
        return steps, chunks, spans

    def run_traced(self, ended):
        """A run of the share alone (no quota: --trace-steps 0, the launcher's default): untraced steps after
        every chunk. How many untraced steps pay for a chunk is the machine's (its chunk's stop against its
        steps: tens of steps here, hundreds on a busy machine), so the run goes on until `ended` chunks have
        ended and is stopped there (at most STEPS_MOST steps: a trace that never takes a next chunk fails)."""
        steps, chunks, spans = self.run_sampled(STEPS_MOST, ["--trace-steps", "0"], stop_after_chunks=ended)
        done = next(m for m in reversed(self.messages) if m["type"] == "done")
        self.assertEqual(done["summary"]["reason"], "stopped", done["summary"])
        self.assertEqual(done["summary"]["steps"], len(steps), done["summary"])
        self.assertLess(len(steps), STEPS_MOST)
        for a, b in zip(spans, spans[1:]):
            self.assertGreater(b[0], a[1] + 1, spans)  # untraced steps between them
        return steps, chunks


class TraceSampling(Sampled):
    SCRIPT_TEXT = FAST_STEPS

    def test_a_fast_script_leaves_untraced_steps_between_its_chunks_and_marks_them(self):
        steps, chunks = self.run_traced(3)
        # Each later chunk says where the untraced steps were: after the last traced step of the chunk before
        # it, before its own first step, on the training thread's row.
        for k in range(1, len(chunks)):
            untraced = [e for e in tunebench_events(chunks[k]["path"]) if e["name"] == "TuneBench: untraced steps"]
            self.assertEqual(len(untraced), 1, untraced)
            e = untraced[0]
            before = step_ranges(chunks[k - 1]["path"])[chunks[k - 1]["last_step"]]
            after = step_ranges(chunks[k]["path"])[chunks[k]["first_step"]]
            # Drawn by chunk k's clock marker, which maps it late by up to the marker's bracket (its thread
            # descheduled between the reading and the stamp), never early.
            with open(chunks[k]["path"]) as f:
                late = float(json.load(f)["tunebench_clock_bracket_us"])
            self.assertGreaterEqual(e["ts"], before[1] - 1000)
            self.assertLessEqual(e["ts"] + e["dur"], after[0] + 1000 + late)
            # It holds the untraced steps' time (at least theirs: from the stop's end to the next start).
            gap_steps = [s for s in steps if chunks[k - 1]["last_step"] < s["i"] < chunks[k]["first_step"]]
            self.assertGreaterEqual(e["dur"] * 1000, sum(s["wall_ns"] for s in gap_steps) * 0.9)
        # The untraced steps are no pause of TuneBench's: the steps after a gap carry only the next start.
        self.assertTrue(all(e["name"] != "TuneBench: untraced steps" or e["args"]["what"] == "untraced steps"
                            for m in chunks for e in tunebench_events(m["path"])))


class TraceSamplingLoader(Sampled):
    SCRIPT_TEXT = LOADER_STEPS

    def test_a_loader_script_pauses_only_between_steps(self):
        steps, chunks = self.run_traced(3)
        self.assertTrue(all(s["samples"] == 32 for s in steps))
        # share 0 traces every step, one chunk after another: test_launch_trace.py


# FAST_STEPS for argv[1] steps, then its own end (a run whose length the launcher is not told).
COUNTED_STEPS = FAST_STEPS.replace("for step in range(100000):", "for step in range(int(sys.argv[1])):").replace(
    "import torch\n", "import sys\nimport torch\n", 1)

QUOTA = 20
# A share so small that its gap is always the longer one (a chunk's stop and start would have to cost under a
# hundredth of a step): where the quota's gap falls is then the quota's rule alone, on any machine.
SHARE_TINY = 0.0001


def simulate_chunks(n, quota, lengths, share_gaps, first=0):
    """The chunks (each its steps) of a sampled trace of an n-step run (n 0: not told; it runs 60 steps) from step
    `first` on, with the quota's gap over the share's (`share_gaps`, one a chunk) and chunks of `lengths` (one a
    chunk, the first MIN_CHUNK): what Tracer plans, without torch."""
    end = n or 60
    chunks, held, step, k = [], 0, first, 0
    length = MIN_CHUNK
    while step < end:
        chunk = list(range(step, min(end, step + length)))
        chunks.append(chunk)
        held += len(chunk)
        last = chunk[-1]
        length = lengths[k % len(lengths)]
        most = quota_gap(quota - held, end - 1 - last if n else None, length, len(chunk))
        gap = share_gaps[k % len(share_gaps)] if most is None else min(share_gaps[k % len(share_gaps)], most)
        step, k = last + 1 + gap, k + 1
    return chunks


def simulate(n, quota, lengths, share_gaps, first=0):
    """The traced steps of simulate_chunks."""
    return [i for chunk in simulate_chunks(n, quota, lengths, share_gaps, first) for i in chunk]


class TraceQuotaRule(unittest.TestCase):
    """The quota's rule as Tracer plans it, over chunk lengths and share gaps a machine may give."""

    def test_a_known_length_holds_the_quota_spread_to_the_runs_end(self):
        rnd = random.Random(84)
        for _ in range(2000):
            n, first = rnd.choice([60, 61, 75, 100, 400]), rnd.choice([0, 0, 14, 40])
            lengths = [rnd.randint(MIN_CHUNK, EVERY) for _ in range(8)]
            traced = simulate(n, QUOTA, lengths, [10 ** 6], first)
            self.assertGreaterEqual(len(traced), min(QUOTA, n - first), (n, first, lengths, traced))
            self.assertEqual(traced[-1], n - 1, (n, first, lengths, traced))  # the last chunk ends with the run
            # A share that pays for shorter gaps may take the quota sooner: it is never held later, nor by fewer.
            fast = simulate(n, QUOTA, lengths, [rnd.randint(1, 40)], first)
            self.assertGreaterEqual(len(fast), min(QUOTA, n - first), (n, first, lengths, fast))
            # Placed evenly: chunks of one length have gaps that differ by a step at most, none where there is
            # room for one before each chunk.
            even = simulate_chunks(n, QUOTA, lengths[:1], [10 ** 6], first)
            gaps = [b[0] - a[-1] - 1 for a, b in zip(even, even[1:])]
            owed = min(QUOTA, n - first) - MIN_CHUNK
            if n - first - MIN_CHUNK - owed >= -(-owed // lengths[0]):
                self.assertGreaterEqual(min(gaps, default=1), 1, (n, first, lengths[:1], even))
            self.assertLessEqual(max(gaps, default=0) - min(gaps, default=0), 1, (n, first, lengths[:1], even))

    def test_an_unknown_length_traces_every_other_step_until_held(self):
        rnd = random.Random(84)
        for _ in range(2000):
            lengths = [rnd.randint(MIN_CHUNK, EVERY) for _ in range(8)]
            traced = simulate(0, QUOTA, lengths, [rnd.choice([1, 5, 10 ** 6])])
            # However the run ends: at least half of its steps so far traced until the quota is held.
            for end in range(1, 61):
                held = len([i for i in traced if i < end])
                self.assertTrue(held >= QUOTA or held >= (end + 1) // 2, (end, lengths, traced))

    def test_no_quota_leaves_the_share_alone(self):
        self.assertIsNone(quota_gap(0, 57, MIN_CHUNK, MIN_CHUNK))
        self.assertIsNone(quota_gap(0, None, MIN_CHUNK, MIN_CHUNK))
        self.assertEqual(simulate(60, 0, [EVERY], [10 ** 6]), list(range(MIN_CHUNK)))


class TraceQuota(Sampled):
    """--trace-steps 20 on a fast script whose share alone traces one chunk of MIN_CHUNK steps in 60."""
    SCRIPT_TEXT = COUNTED_STEPS

    def test_a_60_step_run_holds_the_quota_over_the_whole_run(self):
        steps, _, spans = self.run_sampled(60, ["--trace-steps", str(QUOTA)], ["100000"], share=SHARE_TINY)
        self.assertEqual(len(steps), 60)
        traced = [s["i"] for s in steps if s["traced"]]
        self.assertGreaterEqual(len(traced), QUOTA, spans)
        self.assertTrue(any(i >= 40 for i in traced), spans)  # spread: not all in the run's first part

    def test_a_run_of_unknown_length_traces_every_other_step_until_the_quota_is_held(self):
        steps, _, spans = self.run_sampled(0, ["--trace-steps", str(QUOTA)], ["60"], share=SHARE_TINY)
        self.assertEqual(len(steps), 60)
        traced = [s["i"] for s in steps if s["traced"]]
        self.assertGreaterEqual(len(traced), QUOTA, spans)
        # Until the quota is held, no gap is longer than the chunk before it: half the steps so far, at least.
        before = [(a, b) for a, b in spans if a <= traced[QUOTA - 1]]
        for (a, b), (c, _) in zip(before, before[1:]):
            self.assertLessEqual(c - b - 1, b - a + 1, spans)
        self.assertGreater(traced[QUOTA - 1], QUOTA - 1, spans)  # spread: untraced steps among them

    def test_a_waiting_trace_starts_itself_when_the_rest_of_the_run_is_the_quota(self):
        # run --trace's untraced reference: `trace start` comes late (here never), the quota still holds.
        steps, _, spans = self.run_sampled(30, ["--trace-steps", str(QUOTA), "--trace-wait"], ["100000"],
                                           share=SHARE_TINY)
        self.assertEqual([s["i"] for s in steps if s["traced"]], list(range(30 - QUOTA, 30)), spans)


if __name__ == "__main__":
    unittest.main()
