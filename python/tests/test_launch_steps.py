"""What a step counts and the one-line errors, through the launcher run as the C++ parent runs it (tests/
launch_util.Child): a step the GradScaler skips, a hand-written update timed and nothing around it, the batch
dimension of sequence models (and a step that cannot tell it), an exception, a script that makes no step, a bad
knob, a missing script. The launcher's runs, knobs and stop: test_launch.py; the step rule on event sequences
written by hand: test_iterations.py."""

import contextlib
import io
import json
import os
import re
import textwrap
import unittest

from tests.launch_util import PKG, Child, ScriptTest
from tests.test_launch import TRAIN


class LaunchSteps(ScriptTest):
    SCRIPT_TEXT = TRAIN

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

    def test_a_step_the_grad_scaler_skips_is_its_own_skipped_step(self):
        # A real GradScaler (torch.amp's, on the CPU with fp16 autocast) with a scale so high that the first
        # updates overflow: it skips them and halves its scale. Gradients accumulate over 2 batches, so every
        # other iteration makes no update at all: that is no skipped step. The script prints its scale after
        # each update, which says which updates were skipped.
        import torch
        if not hasattr(torch.amp, "GradScaler"):
            self.skipTest("this torch has no device-generic GradScaler (CPU fp16 scaling needs torch >= 2.3)")
        script = self.write("scaled.py", """
            import torch
            from torch.utils.data import DataLoader, TensorDataset
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 22)
            loader = DataLoader(TensorDataset(torch.randn(256, 8), torch.randint(0, 2, (256,))), batch_size=8)
            for i, (x, y) in enumerate(loader):
                with torch.autocast("cpu", dtype=torch.float16):
                    loss = torch.nn.functional.cross_entropy(model(x), y)
                scaler.scale(loss / 2).backward()
                if i % 2 == 1:
                    before = scaler.get_scale()
                    scaler.step(opt)
                    scaler.update()
                    opt.zero_grad()
                    print(i, scaler.get_scale() < before)
        """)
        c = Child(script, launcher_args=["--steps", "16"])
        code, out, err = c.finish()
        self.assertEqual(code, 0, err)
        skipped_updates = {int(i): flag == "True" for i, flag in (line.split() for line in out.splitlines())}
        steps = [m for m in c.messages if m["type"] == "step"]
        self.assertEqual(len(steps), 16)
        self.assertEqual([s["skipped"] for s in steps], [skipped_updates.get(i, False) for i in range(16)])
        self.assertTrue(any(s["skipped"] for s in steps))
        self.assertEqual([s["optimizer_steps"] for s in steps],
                         [0 if i % 2 == 0 or skipped_updates[i] else 1 for i in range(16)])
        self.assertTrue(all(s["samples"] == 8 for s in steps), [s["samples"] for s in steps])

    def test_bad_knob_exits_two_with_one_line(self):
        c = Child(self.script, launcher_args=["--set", "nope=1"])
        code, _, err = c.finish()
        self.assertEqual(code, 2)
        self.assertEqual(err.count("\n"), 1, err)
        self.assertTrue(err.startswith("tunebench.launch: error: unknown knob 'nope'"), err)

    def test_script_not_found(self):
        c = Child(os.path.join(self.dir.name, "missing.py"))
        code, _, _ = c.finish()
        self.assertEqual(code, 1)
        self.assertIn("script not found", c.messages[0]["message"])

    def test_exception_keeps_steps_and_sends_the_traceback(self):
        path = self.write("boom.py", TRAIN.replace("opt.step()", "opt.step()\n        if len(seen) > 2: raise RuntimeError('boom at step 3')\n        seen.append(1)"))
        c = Child(path)
        code, _, _ = c.finish()
        self.assertEqual(code, 1)
        self.assertEqual(sum(1 for m in c.messages if m["type"] == "step"), 4)
        err = next(m for m in c.messages if m["type"] == "error")
        self.assertEqual(err["message"], "RuntimeError: boom at step 3")
        self.assertNotIn("memory", err)  # only an out-of-memory error says the memory
        self.assertIn("Traceback", err["traceback"])
        self.assertEqual(c.messages[-1]["summary"]["reason"], "error")

    def test_no_training_step_is_said(self):
        path = self.write("not_training.py", "print('hello')\n")
        c = Child(path)
        code, _, _ = c.finish()
        self.assertEqual(code, 1)
        err = next(m for m in c.messages if m["type"] == "error")
        self.assertIn("without a training step", err["message"])

    def test_a_hand_written_update_is_timed_and_nothing_around_it(self):
        # The script brackets its own clip and update (to a file: its stdout stays its own); a no_grad metric
        # and a sleep after it change no parameter and must not be counted.
        brackets = os.path.join(self.dir.name, "brackets.json")
        script = self.write("by_hand.py", """
            import json, sys, time, torch
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
            x, y = torch.randn(32, 64), torch.randint(0, 4, (32,))
            brackets = []
            for it in range(8):
                model.zero_grad()
                out = model(x)
                loss = torch.nn.functional.cross_entropy(out, y)
                loss.backward()
                t0 = time.monotonic_ns()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                if it % 2:
                    for p in model.parameters():
                        p.data.add_(p.grad, alpha=-0.1)
                else:
                    with torch.no_grad():
                        for p in model.parameters():
                            p -= 0.1 * p.grad
                brackets.append(time.monotonic_ns() - t0)
                with torch.no_grad():
                    accuracy = (out.argmax(1) == y).float().mean()
                    time.sleep(0.01)
                print(it, loss.item(), accuracy.item())
                time.sleep(0.01)
            json.dump(brackets, open(sys.argv[1], "w"))
        """)
        c = Child(script, [brackets])
        code, _, err = c.finish()
        self.assertEqual(code, 0, err)
        steps = [m for m in c.messages if m["type"] == "step"]
        with open(brackets) as f:
            measured = json.load(f)
        self.assertEqual(len(steps), 8)
        for s, bracket in zip(steps, measured):
            self.assertEqual((s["update"], s["optimizer_steps"]), ("hand-written", 0), s)
            self.assertGreater(s["optim_ns"], 0, s)
            self.assertLessEqual(s["optim_ns"], bracket, s)  # nothing outside the update is in it
            self.assertGreater(s["wall_ns"], s["forward_ns"] + s["backward_ns"] + s["optim_ns"] + 20_000_000)
        # How much of the bracket the hooked update holds (most of it: a share, so measured by
        # bench/bench_step_accounting.py, not here).

    def test_sequence_modules_tell_their_batch_dimension(self):
        import torch
        from torch import nn
        from torch.nn.utils.rnn import pack_sequence
        from tunebench.batch_dim import decide, model_input, sequence_batch

        self.assertEqual(sequence_batch(nn.LSTM(8, 8), (torch.randn(35, 20, 8),)), (20, 35))
        self.assertEqual(sequence_batch(nn.GRU(8, 8, batch_first=True), (torch.randn(20, 35, 8),)), (20, 35))
        self.assertEqual(sequence_batch(nn.LSTM(8, 8), (torch.randn(35, 8),)), (1, 35))  # unbatched
        self.assertEqual(sequence_batch(nn.GRUCell(8, 8), (torch.randn(20, 8),)), (20, None))
        self.assertEqual(sequence_batch(nn.MultiheadAttention(8, 2), (torch.randn(35, 20, 8),) * 3), (20, 35))
        layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
        self.assertEqual(sequence_batch(layer, (torch.randn(20, 35, 8),)), (20, 35))
        packed = pack_sequence([torch.randn(n, 8) for n in (5, 3, 2)])
        self.assertEqual(sequence_batch(nn.LSTM(8, 8), (packed,)), (3, 5))
        self.assertIsNone(sequence_batch(nn.LSTM(8, 8), ()))  # called with keywords only

        tokens = model_input((torch.zeros(35, 20, dtype=torch.long), None))
        self.assertEqual(tokens, ("shape", (35, 20)))
        self.assertEqual(decide(tokens, (20, 35)), (20, "sequences", 700))  # a language model, sequence first
        self.assertEqual(decide(("shape", (20, 35)), (20, 35)), (20, "sequences", 700))  # batch first
        # a DataLoader whose collate pads sequence-first: its batch's first dimension is the longest sequence
        self.assertEqual(decide(("shape", (9, 4)), (4, 9), loader_count=9), (4, "sequences", 36))
        self.assertEqual(decide(("shape", (32, 3, 28, 28)), None, loader_count=32), (32, "samples", None))
        # an image read by attention as patches stays a sample
        self.assertEqual(decide(("shape", (8, 3, 32, 32)), (8, 64)), (8, "samples", 512))
        # sub-sequences of each sample (4 documents of 6 sentences): the first dimension is the batch
        self.assertEqual(decide(("shape", (4, 6, 10)), (24, 10)), (4, "samples", None))
        self.assertEqual(decide(("shape", (35,)), (1, 35)), (1, "sequences", 35))  # one unbatched sequence
        self.assertEqual(decide(model_input((packed,)), (3, 5)), (3, "sequences", 10))
        # the input begins with its 35 time steps and its batch (20) is not one of its dimensions
        self.assertEqual(decide(("shape", (35, 160)), (20, 35)), (35, "time steps", None))

    def test_when_the_batch_cannot_be_told_the_steps_count_time_steps_and_say_so(self):
        script = self.write("flat.py", """
            import torch
            class Model(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.rnn = torch.nn.LSTM(8, 16)
                    self.out = torch.nn.Linear(16, 1)
                def forward(self, x):  # (time, batch * features), features last
                    h, _ = self.rnn(x.view(x.shape[0], -1, 8))
                    return self.out(h)
            model = Model()
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            for _ in range(4):
                opt.zero_grad()
                model(torch.randn(35, 20 * 8)).pow(2).mean().backward()
                opt.step()
        """)
        c = Child(script)
        code, _, err = c.finish()
        self.assertEqual(code, 0, err)
        steps = [m for m in c.messages if m["type"] == "step"]
        self.assertEqual([(s["samples"], s["unit"]) for s in steps], [(35, "time steps")] * 4)
        warnings = [m for m in c.messages if m["type"] == "warning" and m.get("kind") == "unit"]
        self.assertEqual(len(warnings), 1)
        self.assertTrue(warnings[0]["message"].startswith("samples = time steps"), warnings[0])


class TraceShareRule(unittest.TestCase):
    """--trace-share is the CLI's rule (client/inputs.h kTraceShareMax), held to it here."""

    def test_the_launcher_takes_the_clis_range(self):
        from tunebench import launch
        inputs_h = os.path.join(os.path.dirname(PKG), "client", "include", "client", "inputs.h")
        with open(inputs_h) as f:
            cxx = float(re.search(r"kTraceShareMax = ([0-9.]+);", f.read()).group(1))
        self.assertEqual(launch.TRACE_SHARE_MAX, cxx)
        self.assertEqual(launch._parse(["--trace-share", "0.5", "x.py"]).trace_share, 0.5)
        for bad in ("0.6", "-0.1", "lots"):
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
                launch._parse(["--trace-share", bad, "x.py"])
