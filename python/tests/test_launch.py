"""The launcher run as the C++ parent runs it: a child process, protocol on a pipe fd, messages back on
another. Tiny scripts made here (synthetic tensors: fast), a few steps each. A run costs 2-3 s here (the
process imports torch, the script's optimizer torch._dynamo): runs that several tests read are made once
(shared_run). What a step counts and the one-line errors: test_launch_steps.py; trace chunks:
test_launch_trace.py; step memory: test_step_memory.py; the trace writer and a chunk's rewrite:
test_trace_writer.py."""

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
KNOBS_SET = "workers=2,in_order=off,intra_op_threads=1,zero_grad_none=off,amp=bf16"


class LaunchTest(SharedRuns):
    SCRIPT_TEXT = TRAIN

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

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
        self.assertIs(src["effective"]["in_order"], False)  # a knob that is a row of the table and a class
        self.assertNotIn("num_workers", src["kwargs"])  # the script did not pass it: we did
        started = next(m for m in c.messages if m["type"] == "started")
        self.assertEqual(started["config"]["workers"], "2")
        self.assertEqual(started["config"]["intra_op_threads"], "1")
        self.assertEqual(started["config"]["in_order"], "off")
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
