"""Trace chunks of a script run under the launcher as the C++ parent runs it (tests/launch_util.Child): what
each chunk holds, TuneBench's pause at each boundary (between two steps, never inside one), a save that is
slow (named, then forked), a chunk that cannot be written. What a boundary costs a step: bench/
bench_trace_boundary.py. The writer and a chunk's rewrite in this process: test_trace_writer.py."""

import json
import os
import textwrap

from tests.launch_util import Child, ScriptTest, step_ranges, tunebench_events
from tests.test_launch import TRAIN

# Steps of about 50 ms on this 2-core machine, many ops each (a chunk's save takes a while).
STEP_50MS = textwrap.dedent('''
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    torch.set_num_threads(1)  # two intra-op threads on a busy 2-core machine made a 40 ms step 250 ms
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(1024, 3, 32, 32), torch.randint(0, 10, (1024,))), batch_size=32)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 24, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(24, 24, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
                                torch.nn.Flatten(), torch.nn.Linear(24 * 16, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(10):
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
''')



# How much slower each chunk's save is made (the writer's TUNEBENCH_TEST_EXPORT_DELAY_S): a save this long in place
# makes the writer fork the chunks after it, and a forked boundary's pause (a fork and a session's start: tens of
# ms here) stays well under it.
DELAY_S = 1.0


class LaunchTrace(ScriptTest):
    SCRIPT_TEXT = TRAIN

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

    def between_steps(self, steps):
        """The pause before each step lies between the two steps: in neither one's wall time."""
        for a, b in zip(steps, steps[1:]):
            self.assertGreaterEqual(b["t_ns"] - (a["t_ns"] + a["wall_ns"]), b["profiler_ns"], (a, b))

    def test_trace_chunks_hold_the_steps_and_the_cores(self):
        tdir = os.path.join(self.dir.name, "trace")
        c = Child(self.script, launcher_args=["--steps", "7", "--trace-dir", tdir, "--trace-every", "3",
                                              "--trace-share", "0"])
        code, _, err = c.finish()
        self.assertEqual(code, 0, err)
        hello = next(m for m in c.messages if m["type"] == "hello")
        # Tracing, but a CPU-only torch: no GPU collector, and the reason says why.
        import torch
        if not torch.cuda.is_available():
            self.assertFalse(hello["collector"]["enabled"])
            self.assertIn("no CUDA device", hello["collector"]["reason"])
        chunks = [m for m in c.messages if m["type"] == "trace"]
        self.assertEqual([(m["first_step"], m["last_step"]) for m in chunks], [(0, 2), (3, 5), (6, 6)])
        for m in chunks:
            with open(m["path"]) as f:
                doc = json.load(f)  # still valid JSON after the cores were added
            self.assertEqual(doc["cpu_cores"], str(os.cpu_count()))
            names = {e.get("name") for e in doc["traceEvents"]}
            for i in range(m["first_step"], m["last_step"] + 1):
                self.assertIn("ProfilerStep#%d" % i, names)
            self.assertIn("## forward ##", names)  # the per-step table's forward column reads these
            self.assertFalse(any(str(n).startswith("tunebench.span#") for n in names))
        # Chunks follow each other in time (merged into one trace, they must not all start at 0).
        spans = []
        for m in chunks:
            with open(m["path"]) as f:
                ts = [e["ts"] for e in json.load(f)["traceEvents"] if e.get("name", "").startswith("ProfilerStep")]
            spans.append((min(ts), max(ts)))
        for a, b in zip(spans, spans[1:]):
            self.assertLess(a[1], b[0])
        # TuneBench's pause at each boundary: drawn in the chunk after it (the last one also holds the run's
        # final stop), and reported on the step after it, outside that step's wall time.
        steps = [m for m in c.messages if m["type"] == "step"]
        self.assertTrue(all(isinstance(s["profiler_ns"], int) and s["profiler_ns"] >= 0 for s in steps))
        self.assertEqual([i for i, s in enumerate(steps) if s["profiler_ns"] > 0 and i], [3, 6])
        self.between_steps(steps)
        whats = [[e["args"]["what"] for e in tunebench_events(m["path"])] for m in chunks]
        self.assertEqual(whats, [["profiler start"], ["profiler stop and start"],
                                 ["profiler stop and start", "profiler stop"]])
        done = c.messages[-1]
        self.assertEqual(done["type"], "done")
        self.assertGreater(done["summary"]["profiler_ns"], sum(s["profiler_ns"] for s in steps))
        # Each step's range ends with the step, on the chunk's clock (to its marker's bracket): TuneBench's own
        # work at a step's end (the first step's `hello`, the step's message) is in none; it once held step 0's
        # range 3-6 ms past the step.
        for m in chunks:
            with open(m["path"]) as f:
                doc = json.load(f)
            offset_us = float(doc["tunebench_clock_offset_us"])
            late = 200 + float(doc["tunebench_clock_bracket_us"])
            for i, (_, end) in step_ranges(m["path"]).items():
                step_end = (steps[i]["t_ns"] + steps[i]["wall_ns"]) / 1000.0 + offset_us
                self.assertLessEqual(end, step_end + late, (i, end - step_end))

    def test_a_slow_save_is_named_as_the_profilers_then_forked(self):
        """Every chunk's save made DELAY_S slower (the writer's test hook). The first, in place (its session
        stopped fast), is the boundary's pause, named: between two steps, never in one. It was long, so the
        chunks after it are forked: those boundaries do not wait for their saves, the steps go on meanwhile,
        and the chunks come later, all of them, complete and in order, before `done`."""
        script = self.write("step50.py", STEP_50MS)
        tdir = os.path.join(self.dir.name, "trace")
        c = Child(script, launcher_args=["--steps", "7", "--trace-dir", tdir, "--trace-every", "3",
                                         "--trace-share", "0"],
                  env=dict(os.environ, TUNEBENCH_TEST_EXPORT_DELAY_S=str(DELAY_S)))
        code, _, err = c.finish(timeout=120)
        self.assertEqual(code, 0, err)
        steps = [m for m in c.messages if m["type"] == "step"]
        self.assertEqual(len(steps), 7)
        self.between_steps(steps)
        self.assertGreater(steps[3]["profiler_ns"], DELAY_S * 1e9)  # the save in place: the boundary's pause
        self.assertLess(steps[6]["profiler_ns"], DELAY_S * 1e9)  # forked: the boundary did not wait for it
        types = [m["type"] for m in c.messages]
        self.assertEqual(types[-1], "done")
        chunks = [m for m in c.messages if m["type"] == "trace"]
        self.assertEqual([(m["first_step"], m["last_step"]) for m in chunks], [(0, 2), (3, 5), (6, 6)])
        parts = [(e["args"]["save_us"] > DELAY_S * 1e6, e["args"]["fork_us"] > 0) for m in chunks[1:]
                 for e in tunebench_events(m["path"]) if e["args"]["what"] == "profiler stop and start"]
        self.assertEqual(parts, [(True, False), (False, True)])
        # The forked chunk came after the step that followed its boundary: it was written while that step ran.
        self.assertGreater(types.index("trace", types.index("trace") + 1),
                           next(i for i, m in enumerate(c.messages) if m["type"] == "step" and m["i"] == 6))
        ranges = [step_ranges(m["path"]) for m in chunks]
        for k, at in ((1, 3), (2, 6)):  # each boundary drawn in the chunk after it, the in-place one and the forked
            ev = [e for e in tunebench_events(chunks[k]["path"]) if e["args"]["what"] == "profiler stop and start"]
            self.assertEqual(len(ev), 1, ev)
            e = ev[0]
            self.assertEqual((e["ph"], e["name"]), ("X", "TuneBench: trace chunk boundary"))
            self.assertAlmostEqual(e["dur"], steps[at]["profiler_ns"] / 1000.0, delta=0.002)
            # On the chunks' own clock, between the step before (previous chunk) and the step after: the
            # mapping from monotonic time is right to well under a millisecond, and to within its marker's
            # bracket (a marker stamped late, its thread descheduled, maps the chunk late by up to as much).
            with open(chunks[k]["path"]) as f:
                doc = json.load(f)
            late = float(doc["tunebench_clock_bracket_us"])
            self.assertGreaterEqual(e["ts"], ranges[k - 1][at - 1][1] - 200)
            self.assertLessEqual(e["ts"] + e["dur"], ranges[k][at][0] + 200 + late)
            mark = next(x for x in doc["traceEvents"] if x.get("name") == "TuneBench: clock")
            self.assertEqual((e["pid"], e["tid"]), (mark["pid"], mark["tid"]))  # the training thread's row
        # The run's last stop waited for the writer (two chunks held): drawn, the wait inside its duration.
        stop = [e for e in tunebench_events(chunks[2]["path"]) if e["args"]["what"] == "profiler stop"]
        self.assertEqual(len(stop), 1)
        self.assertGreaterEqual(stop[0]["dur"], stop[0]["args"]["writer_wait_us"])
        self.assertGreaterEqual(c.messages[-1]["summary"]["profiler_ns"],
                                sum(s["profiler_ns"] for s in steps) + stop[0]["dur"] * 1000 - 1000)

    def test_a_chunk_that_cannot_be_written_is_lost_with_a_warning(self):
        tdir = os.path.join(self.dir.name, "trace")
        # A folder that is not empty in the way of the second chunk's file: its export cannot be moved there.
        os.makedirs(os.path.join(tdir, "chunk-00002.json"))
        open(os.path.join(tdir, "chunk-00002.json", "keep"), "w").close()
        c = Child(self.script, launcher_args=["--steps", "7", "--trace-dir", tdir, "--trace-every", "3",
                                              "--trace-share", "0"])
        code, _, err = c.finish()
        self.assertEqual(code, 0, err)
        chunks = [m for m in c.messages if m["type"] == "trace"]
        self.assertEqual([(m["first_step"], m["last_step"]) for m in chunks], [(0, 2), (6, 6)])
        warnings = [m["message"] for m in c.messages if m["type"] == "warning"]
        self.assertTrue(any(w.startswith("trace chunk not written") for w in warnings), warnings)
        self.assertEqual(len([m for m in c.messages if m["type"] == "step"]), 7)
        self.assertEqual(c.messages[-1]["type"], "done")

