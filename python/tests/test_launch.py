"""The launcher run as the C++ parent runs it: a child process, protocol on a pipe fd, messages back on
another. Tiny scripts made here (synthetic tensors: fast), a few steps each. A run costs 2-3 s here (the
process imports torch, the script's optimizer torch._dynamo): runs that several tests read are made once
(shared_run). Trace chunks: test_launch_trace.py; step memory: test_step_memory.py; the trace writer and a
chunk's rewrite: test_trace_writer.py."""

import json
import os
import textwrap
import time

from tests.launch_util import Child, Plain, SharedRuns

TRAIN = textwrap.dedent('''
    import sys, torch
    from torch.utils.data import DataLoader, TensorDataset
    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(512, 3, 8, 8), torch.randint(0, 4, (512,)))
    loader = DataLoader(ds, batch_size=16, shuffle=True)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    seen = []
    class Probe(torch.nn.Module):
        def forward(self, x):
            return x
    for epoch in range(int(sys.argv[1]) if len(sys.argv) > 1 else 100):
        for x, y in loader:
            opt.zero_grad()
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out, y)
            loss.backward()
            opt.step()
''')


# TRAIN with knobs set at the start (one run that the tests of those knobs read): after each update it writes
# whether zero_grad() left the gradients None and the intra-op threads; model[0]'s output dtype called on its
# own (outside the hooked forward) and, through a forward hook, inside the model's forward. zero_grad_none=off:
# torch 2's zero_grad() drops the gradients by itself (the knob's default, on), so only off shows the knob.
KNOBS_AT_START = TRAIN.replace("opt.step()", "opt.step()\n        opt.zero_grad()\n        open('{dir}/zg.txt', 'w')"
                               ".write('%s %d' % (model[0].weight.grad is None, torch.get_num_threads()))").replace(
    "out = model(x)", "open('{dir}/outside.txt', 'w').write(str(model[0](x).dtype))\n        out = model(x)").replace(
    "class Probe", "model[0].register_forward_hook(lambda m, i, o: [open('{dir}/inside.txt', 'w').write(str(o.dtype)), "
    "None][1])\nclass Probe")
KNOBS_SET = "workers=2,intra_op_threads=1,zero_grad_none=off,amp=bf16"


class LaunchTest(SharedRuns):
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

    def test_steps_samples_and_a_clean_end(self):
        c = self.shared_run("train", TRAIN, launcher_args=["--steps", "4"])
        code, _, err = c.result
        self.assertEqual(code, 0, err)
        steps = [m for m in c.messages if m["type"] == "step"]
        self.assertEqual([s["i"] for s in steps], [0, 1, 2, 3])
        self.assertTrue(all(s["samples"] == 16 for s in steps))
        self.assertTrue(all(s["wall_ns"] > 0 and s["data_wait_ns"] >= 0 for s in steps))
        self.assertEqual(c.messages[-1]["type"], "done")
        self.assertEqual(c.messages[-1]["summary"], {"steps": 4, "reason": "steps"})
        hello = next(m for m in c.messages if m["type"] == "hello")
        ids = [k["id"] for k in hello["knobs"]]
        self.assertIn("workers", ids)
        self.assertEqual(next(k for k in hello["knobs"] if k["id"] == "workers")["value"], "0")
        srcs = [m for m in c.messages if m["type"] == "source"]
        self.assertEqual(srcs[0]["kind"], "dataloader")
        self.assertIn("DataLoader(ds, batch_size=16", srcs[0]["code"])
        self.assertEqual(srcs[1]["kind"], "optimizer")
        self.assertEqual(srcs[1]["class"], "SGD")

    def test_loader_knobs_apply_only_where_the_steps_have_a_dataloader(self):
        # A script that makes its batches itself (a regression on tensors, a hand-written update): the tuner
        # must not try loader knobs on it, and hello says why. The DataLoader script's are applicable.
        path = self.write("no_loader.py", textwrap.dedent("""
            import torch
            torch.manual_seed(0)
            x = torch.randn(256, 4); y = x.sum(1, keepdim=True)
            model = torch.nn.Linear(4, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.05)
            for step in range(6):
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad(); loss.backward(); opt.step()
        """))
        no_loader = Child(path, launcher_args=["--steps", "3"])
        no_loader.result = no_loader.finish()
        with_loader = self.shared_run("train", TRAIN, launcher_args=["--steps", "4"])
        for c, applicable in ((no_loader, False), (with_loader, True)):
            script = c.p.args[-1]
            code, _, err = c.result
            self.assertEqual(code, 0, err)
            hello = next(m for m in c.messages if m["type"] == "hello")
            knobs = {k["id"]: k for k in hello["knobs"]}
            for kid in ("workers", "prefetch", "persistent_workers"):
                self.assertEqual(knobs[kid]["applicable"], applicable, (script, knobs[kid]))
                if not applicable:
                    self.assertIn("no DataLoader in the script's steps", knobs[kid]["reason"])
            self.assertTrue(knobs["intra_op_threads"]["applicable"])
            # A Linear model: an optimizer and a module, but no 4-D weight for channels_last to change.
            self.assertTrue(knobs["zero_grad_none"]["applicable"], knobs["zero_grad_none"])
            self.assertTrue(knobs["amp"]["applicable"], knobs["amp"])
            self.assertEqual(knobs["channels_last"]["applicable"], applicable, knobs["channels_last"])
            if not applicable:
                self.assertIn("no 4-D weight", knobs["channels_last"]["reason"])
        import torch
        if not torch.cuda.is_available():  # no CUDA advice on a CPU run
            self.assertNotIn("cuda", knobs["amp"]["reason"].lower().replace("for cuda devices", ""))

    def test_each_knob_says_what_it_needs(self):
        # A model of raw tensors with a hand-written update: no optimizer object for zero_grad_none, no module
        # for amp, channels_last and compile.
        raw = self.write("raw.py", textwrap.dedent("""
            import torch
            torch.manual_seed(0)
            w = torch.zeros(4, 1, requires_grad=True)
            x = torch.randn(256, 4); y = x.sum(1, keepdim=True)
            for step in range(6):
                loss = ((x @ w - y) ** 2).mean()
                loss.backward()
                with torch.no_grad():
                    w -= 0.05 * w.grad
                    w.grad.zero_()
        """))
        c = Child(raw, launcher_args=["--steps", "3"])
        code, _, err = c.finish()
        self.assertEqual(code, 0, err)
        k = {x["id"]: x for x in next(m for m in c.messages if m["type"] == "hello")["knobs"]}
        self.assertFalse(k["zero_grad_none"]["applicable"])
        self.assertIn("no torch.optim optimizer", k["zero_grad_none"]["reason"])
        for kid in ("amp", "channels_last", "compile"):
            self.assertFalse(k[kid]["applicable"], k[kid])
            self.assertIn("no torch.nn.Module forward", k[kid]["reason"])
        # (a Linear model and the DataLoader script's convolution: test_loader_knobs_apply_only_where_...)

    # --- knobs set at the start: one run (KNOBS_AT_START), read by each knob's test ----------------------------
    def knobs_run(self):
        c = self.shared_run("knobs", KNOBS_AT_START, launcher_args=["--steps", "3", "--set", KNOBS_SET])
        code, _, err = c.result
        self.assertEqual(code, 0, err)
        return c

    def written(self, name):
        with open(os.path.join(self.shared_dir, name)) as f:
            return f.read()

    def test_set_at_start_is_read_back_from_the_dataloader(self):
        c = self.knobs_run()
        src = next(m for m in c.messages if m["type"] == "source" and m["kind"] == "dataloader")
        self.assertEqual(src["effective"]["num_workers"], 2)
        self.assertNotIn("num_workers", src["kwargs"])  # the script did not pass it: we did
        started = next(m for m in c.messages if m["type"] == "started")
        self.assertEqual(started["config"]["workers"], "2")
        self.assertEqual(started["config"]["intra_op_threads"], "1")
        self.assertEqual((started["config"]["zero_grad_none"], started["config"]["amp"]), ("off", "bf16"))
        self.assertEqual(len([m for m in c.messages if m["type"] == "step"]), 3)

    def test_amp_bf16_runs_the_forward_in_bf16(self):
        self.knobs_run()
        # model[0] is called outside the hooked top-level forward: fp32 there...
        self.assertEqual(self.written("outside.txt"), "torch.float32")
        self.assertEqual(self.written("inside.txt"), "torch.bfloat16")  # ...and bf16 inside it

    def test_zero_grad_none_and_threads_apply(self):
        self.knobs_run()
        self.assertEqual(self.written("zg.txt"), "False 1")  # zero_grad() filled the gradients with zeros

    def test_live_set_recreates_the_iterator_then_stop_ends_at_a_step_boundary(self):
        c = Child(self.script, launcher_args=["--steps", "3000"], with_input=True)
        self.assertIsNotNone(c.until(lambda m: m["type"] == "step" and m["i"] == 2))
        c.send(type="set", knob="workers", value=2)
        applied = c.until(lambda m: m["type"] in ("config_applied", "error"))
        self.assertEqual(applied["type"], "config_applied", applied)
        self.assertEqual(applied["changed"], {"workers": "2"})
        self.assertEqual(applied["pending"], ["workers"])
        loader = c.until(lambda m: m["type"] == "loader")
        self.assertEqual(loader["num_workers"], 2)
        later = c.until(lambda m: m["type"] == "step")
        self.assertEqual(later["config_rev"], 1)
        # persistent_workers too (DataLoader refuses a plain setattr after construction): read back.
        c.send(type="set", knob="persistent_workers", value="on")
        applied = c.until(lambda m: m["type"] in ("config_applied", "error"))
        self.assertEqual(applied["type"], "config_applied", applied)
        loader = c.until(lambda m: m["type"] == "loader")
        self.assertTrue(loader["persistent_workers"])
        self.assertEqual(loader["num_workers"], 2)
        # ...so hello says it is live: the tuner sends a live change only to knobs that are not process-scope.
        hello = next(m for m in c.messages if m["type"] == "hello")
        scope = {k["id"]: k["process_scope"] for k in hello["knobs"]}
        self.assertFalse(scope["persistent_workers"])
        self.assertFalse(scope["workers"])
        # cudnn_benchmark cannot go back off in a running process: the tuner measures it in fresh ones.
        self.assertTrue(scope["cudnn_benchmark"])
        c.send(type="set", knob="batch_size", value=64)
        err = c.until(lambda m: m["type"] == "error")
        self.assertTrue(err["recoverable"])
        self.assertIn("does not apply to scripts", err["message"])
        # A stop ends the run at the next step boundary (--steps is far: only a stop ends it this soon).
        c.send(type="stop")
        code, _, e = c.finish()
        self.assertEqual(code, 0, e)
        self.assertEqual(c.messages[-1]["summary"]["reason"], "stopped")
        self.assertLess(c.messages[-1]["summary"]["steps"], 3000)

    def test_stop_during_a_long_validation_ends_at_once(self):
        # Each validation batch takes 0.5 s (20 of them): the stop, sent once the validation began, is answered
        # inside the validation, not after it (the script counts its validation batches in a file).
        progress = os.path.join(self.dir.name, "val.txt")
        path = self.write("slow_val.py", """
            import sys, time, torch
            from torch.utils.data import DataLoader, TensorDataset
            model = torch.nn.Linear(4, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            train = DataLoader(TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,))), batch_size=8)
            val = DataLoader(TensorDataset(torch.randn(160, 4)), batch_size=8)
            progress = open(sys.argv[1], "w")
            for epoch in range(3):
                for x, y in train:
                    loss = torch.nn.functional.cross_entropy(model(x), y)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                with torch.no_grad():
                    for (x,) in val:
                        model(x)
                        progress.write("batch\\n")
                        progress.flush()
                        time.sleep(0.5)
        """)
        c = Child(path, [progress], with_input=True)
        self.assertIsNotNone(c.until(lambda m: m["type"] == "step" and m["i"] == 3))
        deadline = time.time() + 60
        while not (os.path.exists(progress) and os.path.getsize(progress)) and time.time() < deadline:
            time.sleep(0.01)  # until the validation's first batch
        c.send(type="stop")
        code, _, _ = c.finish()
        self.assertEqual(code, 0)
        with open(progress) as f:
            batches = len(f.read().splitlines())
        self.assertGreaterEqual(batches, 1)
        self.assertLess(batches, 20)  # the validation did not run to its end
        self.assertEqual(c.messages[-1]["summary"]["reason"], "stopped")
        self.assertEqual(c.messages[-1]["summary"]["steps"], 4)
        outside = [m for m in c.messages if m["type"] == "outside"]
        self.assertEqual(len(outside), 1, [(m["type"], m.get("i")) for m in c.messages])
        self.assertEqual((outside[0]["after_step"], outside[0]["epoch"], outside[0]["until"]), (3, 1, "exit"))

    def test_the_scripts_objects_stay_what_they_are(self):
        # What a script (or a library such as an LR scheduler) can see of its objects is the same with and
        # without the launcher: types, bound methods, the iterator class, torch.save's identity.
        path = self.write("objects.py", """
            import inspect, torch
            from torch.utils.data import DataLoader, TensorDataset
            model = torch.nn.Linear(4, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            step, zero_grad = opt.step, opt.zero_grad
            sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
            loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,))), batch_size=8)
            it = iter(loader)
            print(type(it).__name__, type(opt).__name__, type(model).__name__)
            print(inspect.ismethod(step), step.__self__ is opt, step.__func__.__name__)
            print(inspect.ismethod(zero_grad), zero_grad.__self__ is opt, type(opt).zero_grad.__name__)
            print(torch.save is torch.serialization.save, torch.save.__name__, DataLoader.__iter__.__name__)
            print(len(model._forward_hooks), len(model._forward_pre_hooks), opt._optimizer_step_pre_hooks)
            for x, y in it:
                loss = torch.nn.functional.cross_entropy(model(x), y)
                print(loss.grad_fn.name(), type(model(x)).__name__)
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
            print(sched.get_last_lr(), opt._opt_called)
        """)
        plain = Plain(path)
        c = Child(path)
        code, out, err = c.finish()
        pcode, pout, perr = plain.result()
        self.assertEqual(pcode, 0, perr)
        self.assertEqual(code, 0, err)
        self.assertEqual(out, pout)
        self.assertEqual(sum(1 for m in c.messages if m["type"] == "step"), 2)

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

