"""Scripts written the way people write them (tests/corpus/), each run plainly and under the launcher: the
launcher must change nothing the script does (same stdout - the losses printed with repr, so bitwise - same
exit code, same traceback) and must report one step per training iteration with its phases, and the time
between iterations (validation, checkpoints) on its own.

Each script's iterations are counted from its own output: every one prints a line per iteration."""

import os
import re
import shutil
import tempfile
import textwrap
import unittest

from tests.launch_util import PKG, Child, Plain

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
# One intra-op thread: the plain and the launched run of a script are compared, and this 2-core machine
# runs builds beside the tests; two threads fighting them made each step 10-100x slower.
ENV = dict(os.environ, PYTHONPATH=PKG, OMP_NUM_THREADS="1", PYTHONHASHSEED="0")


def _traceback_of(stderr):
    """The traceback Python printed (from its "Traceback" line), or the whole of stderr without one."""
    i = stderr.rfind("Traceback (most recent call last):")
    return stderr[i:] if i >= 0 else stderr


def _larger_part(o):
    """What an outside interval is named by (launch.py): its larger part, the first of equals."""
    return max(("evaluation", "checkpoint", "other"), key=lambda k: o[k + "_ns"])


def _run_of_tiny_mlp(hidden):
    """A launcher run whose model is a tiny MLP, for the model hooks on their own (hooks_model)."""
    import torch

    class Run:
        requested = {}
    run = Run()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 2))
    run.models = [m]
    return run, m


def _aot_eager():
    """The compile knob (TUNEBENCH_COMPILE_BACKEND) and Module.compile() with the aot_eager backend while the
    context lasts: TorchDynamo's tracing and AOTAutograd's backward as TorchInductor gets them, without its C++
    build (a cold Inductor cache made a share of two such tests take 30 s)."""
    import contextlib
    from unittest import mock
    import torch
    compile_ = torch.nn.Module.compile
    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.dict(os.environ, {"TUNEBENCH_COMPILE_BACKEND": "aot_eager"}))
    stack.enter_context(mock.patch.object(
        torch.nn.Module, "compile",
        lambda self, *a, **k: compile_(self, *a, **dict(k, backend=k.get("backend", "aot_eager")))))
    return stack


class CorpusRun:
    """A corpus script (or the script at `path`) run plainly and under the launcher at the same time (launch_util.
    Plain), each in a fresh directory of its own: their files do not meet ("{tmp}" in args stands for it)."""

    def __init__(self, test, name=None, args=(), launcher_args=(), timeout=300, path=None):
        root = tempfile.mkdtemp(prefix="tb-corpus-")
        test.addCleanup(shutil.rmtree, root, True)
        path = path or os.path.join(CORPUS, name + ".py")
        self.dir, plain_dir = os.path.join(root, "launched"), os.path.join(root, "plain")
        os.makedirs(self.dir)
        os.makedirs(plain_dir)
        beside = Plain(path, [a.replace("{tmp}", plain_dir) for a in args], ENV, plain_dir, timeout)
        try:
            child = Child(path, [a.replace("{tmp}", self.dir) for a in args], launcher_args=launcher_args, env=ENV,
                          cwd=self.dir)
            self.launched = child.finish(timeout)
        finally:
            self.plain = beside.result()
        self.messages = child.messages
        self.steps = [m for m in self.messages if m["type"] == "step"]
        self.outside = [m for m in self.messages if m["type"] == "outside"]
        self.done = self.messages[-1] if self.messages and self.messages[-1]["type"] == "done" else None

    def lines(self, pattern):
        return [line for line in self.plain[1].splitlines() if re.match(pattern, line)]


class CorpusTest(unittest.TestCase):
    maxDiff = None

    def check(self, name, iteration, args=(), code=0, samples=None, optimizer_steps=None, timeout=300,
              forwards=True):
        """Runs `name` both ways and checks what every script must keep; returns the run for more checks.
        iteration: a regex matching the line the script prints once per training iteration; args: the
        script's, "{tmp}" standing for the run's directory; forwards: the model's forward is called through
        the module (False: `layer.forward(x)`, which no hook sees: forward_ns is 0)."""
        r = CorpusRun(self, name, args, timeout=timeout)
        (pcode, pout, perr), (lcode, lout, lerr) = r.plain, r.launched
        self.assertEqual(pcode, code, perr[-2000:])
        self.assertEqual(lcode, pcode, lerr[-2000:])
        self.assertEqual(lout, pout)  # the losses are printed with repr: bitwise the same
        self.assertEqual(_traceback_of(lerr).strip() if code else "", _traceback_of(perr).strip() if code else "")
        iterations = len(r.lines(iteration))
        self.assertGreater(iterations, 0, pout[-1000:])
        self.assertEqual(len(r.steps), iterations, [(s["i"], s["samples"], s["optimizer_steps"]) for s in r.steps])
        self.assertEqual([s["i"] for s in r.steps], list(range(iterations)))
        for s in r.steps:
            self.assertGreater(s["samples"], 0, s)
            if samples is not None:
                self.assertEqual(s["samples"], samples, s)
            self.assertEqual(s["forward_ns"] > 0, forwards, s)
            self.assertGreater(s["backward_ns"], 0, s)
            phases = s["forward_ns"] + s["backward_ns"] + s["optim_ns"] + s["data_wait_ns"]
            self.assertLessEqual(phases, s["wall_ns"], s)  # exclusive phases inside the step
            # the update is timed whether an optimizer made it or the script did by hand
            self.assertEqual(s["optim_ns"] > 0, s["update"] != "none", s)
            self.assertEqual(s["update"] == "optimizer", s["optimizer_steps"] > 0, s)
            if optimizer_steps is not None:
                want = optimizer_steps(s["i"]) if callable(optimizer_steps) else optimizer_steps
                self.assertEqual(s["optimizer_steps"], want, s)
        for a, b in zip(r.steps, r.steps[1:]):  # steps and outside intervals never overlap
            self.assertGreaterEqual(b["t_ns"], a["t_ns"] + a["wall_ns"])
        # The training loader's passes: counted up one at a time, and an interval after a pass's end (its `epoch`)
        # comes before the first step of the next pass.
        passes = [s["loader_pass"] for s in r.steps]
        self.assertEqual(passes[0], 0, passes)
        # What a pass of the step's loader holds, as len(DataLoader) says it (0: no loader, or no length).
        self.assertTrue(all(isinstance(s["loader_len"], int) and s["loader_len"] >= 0 for s in r.steps))
        self.assertTrue(all(b - a in (0, 1) for a, b in zip(passes, passes[1:])), passes)
        for o in r.outside:
            if o.get("epoch") is not None and o["after_step"] is not None and o["after_step"] + 1 < len(r.steps):
                self.assertEqual(r.steps[o["after_step"] + 1]["loader_pass"], o["epoch"], (o, passes))
        self.assertIsNotNone(r.done)
        self.assertEqual(r.done["summary"]["steps"], iterations)
        self.assertEqual(r.done["summary"]["reason"], "completed" if code == 0 else "error")
        return r

    # --- one script per pattern ------------------------------------------------------------------------------
    def test_imagenet_style_step_lr_validation_and_checkpoint_each_epoch(self):
        r = self.check("imagenet_steplr", r"^Epoch: \[\d+\]\[\d+/\d+\] loss ", args=["--out", "{tmp}", "--epochs", "2"],
                       samples=16, optimizer_steps=1)
        self.assertTrue(os.path.exists(os.path.join(r.dir, "checkpoint.pth.tar")))
        # One outside interval per epoch, right after its last step: validation and checkpoint, not in a step.
        self.assertEqual([(o["after_step"], o["epoch"], o["until"]) for o in r.outside],
                         [(7, 1, "step"), (15, 2, "exit")])
        self.assertEqual([s["loader_pass"] for s in r.steps], [0] * 8 + [1] * 8)  # two passes of 8 steps
        self.assertEqual([s["loader_len"] for s in r.steps], [8] * 16)  # ... and each says so from its first step
        for o in r.outside:
            self.assertGreater(o["evaluation_ns"], 0)
            self.assertGreater(o["checkpoint_ns"], 0)
            self.assertEqual(o["evaluation_ns"] + o["checkpoint_ns"] + o["other_ns"], o["wall_ns"])
            self.assertEqual(o["kind"], _larger_part(o), o)
        o = r.outside[0]  # it ends where the next epoch's first step begins
        self.assertEqual(o["t_ns"] + o["wall_ns"], r.steps[o["after_step"] + 1]["t_ns"])
        summary = r.done["summary"]["outside"]
        self.assertEqual(summary["intervals"], 2)

    def test_mnist_style_one_cycle_tqdm_clipping_and_sys_exit_main(self):
        r = self.check("mnist_onecycle", r"^Train Epoch: ", samples=32, optimizer_steps=1)
        self.assertEqual([o["epoch"] for o in r.outside], [1, 2])
        for o in r.outside:
            self.assertGreater(o["evaluation_ns"], 0, o)
            self.assertEqual(o["kind"], _larger_part(o), o)

    def test_accumulation_in_a_trainer_class_plateau_scheduler_and_exit_code_3(self):
        r = self.check("accum_plateau", r"^epoch \d+ batch \d+ loss", code=3, samples=8,
                       optimizer_steps=lambda i: 1 if i % 4 == 3 else 0)
        self.assertEqual([o["epoch"] for o in r.outside], [1, 2, 3])
        err = next(m for m in r.messages if m["type"] == "error")  # a failing exit code is said in one line
        self.assertEqual(err["message"], "exit code 3 at accum_plateau.py:80: sys.exit(3)")

    def test_gan_two_optimizers_per_batch_are_one_step(self):
        r = self.check("dcgan", r"^\[\d+/\d+\]\[\d+/\d+\] Loss_D", samples=16, optimizer_steps=2)
        # the sample drawn from G under no_grad after each epoch is evaluation outside the steps
        self.assertEqual([o["epoch"] for o in r.outside], [1, 2])
        self.assertTrue(all(o["evaluation_ns"] > 0 for o in r.outside))

    def test_gan_without_a_dataloader_runs_its_discriminator_on_the_generators_output(self):
        # D steps, then G's loss runs D again on G's output: still the same iteration (G's update is to come)
        r = self.check("gan_1d", r"^Epoch \d+: D ", samples=32, optimizer_steps=2)
        self.assertEqual({s["loader_len"] for s in r.steps}, {0})  # no loader: no length said

    def test_actor_critic_without_a_dataloader(self):
        self.check("actor_critic", r"^episode \d+ ", optimizer_steps=2)

    def test_grad_scaler_skipped_updates_are_skipped_steps(self):
        r = self.check("amp_scaler", r"^epoch \d+ iter \d+ loss", samples=32)
        scales = [float(line.split()[-1]) for line in r.lines(r"^epoch \d+ iter \d+ loss")]
        skipped = [now < before for before, now in zip([2.0 ** 24] + scales, scales)]
        self.assertTrue(any(skipped))
        self.assertEqual([s["skipped"] for s in r.steps], skipped)
        self.assertEqual([s["optimizer_steps"] for s in r.steps], [0 if k else 1 for k in skipped])

    def test_lbfgs_closure_built_in_a_function(self):
        r = self.check("lbfgs_fit", r"^step \d+ loss", samples=200, optimizer_steps=1)
        for s in r.steps:  # the closure's forwards and backwards run inside the step: counted as theirs
            self.assertGreater(s["optim_ns"], 0)

    def test_lbfgs_time_series_up_to_20_closures_per_step(self):
        """LBFGS with its default max_iter=20: one optimizer.step(closure) runs up to 20 forward/backward passes
        of an LSTMCell model unrolled over the series, then a no_grad prediction follows each step."""
        r = self.check("sine_lbfgs", r"^STEP: ", samples=8, optimizer_steps=1)
        passes = [len(block.splitlines()) - 1 for block in r.plain[1].split("STEP: ")[1:]]
        self.assertTrue(all(n > 2 for n in passes), passes)  # "loss:" per closure, then "test loss:"
        for s in r.steps:  # the closures' forwards and backwards are the step's, and in no other phase
            self.assertEqual(s["unit"], "sequences", s)
            self.assertLessEqual(s["forward_ns"] + s["backward_ns"] + s["optim_ns"] + s["data_wait_ns"],
                                 s["wall_ns"], s)
            self.assertGreater(s["optim_ns"], 0, s)
        # the prediction after each step is evaluation between the steps, each step begins at its step() call.
        # The interval also holds the script's np.save of the prediction: its kind is whichever part is larger
        # (under ctest -j2 one write outlasted the small prediction: "other"), but the evaluation is always seen.
        self.assertEqual([(o["after_step"], o["until"]) for o in r.outside],
                         [(i, "step") for i in range(len(r.steps) - 1)] + [(len(r.steps) - 1, "exit")])
        for o in r.outside:
            self.assertGreater(o["evaluation_ns"], 0, o)
            self.assertEqual(o["kind"], _larger_part(o), o)
        for o, nxt in zip(r.outside, r.steps[1:]):
            self.assertEqual(o["t_ns"] + o["wall_ns"], nxt["t_ns"])
        # the parent hears when the first step began, before the step itself (which can take minutes)
        types = [m["type"] for m in r.messages]
        self.assertLess(types.index("training"), types.index("step"))
        self.assertEqual(r.messages[types.index("training")]["t_ns"], r.steps[0]["t_ns"])

    def test_forward_forward_layer_local_losses_and_optimizers(self):
        """Each layer trains alone on one batch (next(iter(loader))), its forward called directly: every
        backward and Adam step of a layer is a step, and the forward's time, which no hook sees, is said to
        be the loop's own."""
        r = self.check("forward_forward", r"^Loss: ", samples=256, optimizer_steps=1, forwards=False)
        self.assertEqual(len(r.steps), 2 * 6)  # two layers, 6 epochs each
        warned = [m for m in r.messages if m["type"] == "warning" and m.get("kind") == "forward"]
        self.assertEqual(len(warned), 1, warned)
        self.assertIn("forward called directly", warned[0]["message"])

    def test_graph_network_full_graph_steps_with_evaluation_between_them(self):
        """One step per epoch over the whole graph, then an evaluation on the training and validation nodes that
        takes longer than the step: each evaluation is time between two steps, reported as evaluation."""
        r = self.check("gcn_full_graph", r"^Epoch: \d+ ", samples=300, optimizer_steps=1)
        self.assertEqual([(o["after_step"], o["until"]) for o in r.outside[:-1]],
                         [(i, "step") for i in range(len(r.steps) - 1)])
        # The last interval runs to the process's exit (the script's last evaluation, then its teardown).
        last = r.outside[-1]
        self.assertEqual((last["after_step"], last["until"]), (len(r.steps) - 1, "exit"))
        # Every interval holds its evaluation, and is named by its larger part: under a load of 4 on 2 cores the
        # teardown outlasted the last evaluation once, and the code around one evaluation outlasted it once.
        for o in r.outside:
            self.assertGreater(o["evaluation_ns"], 0, o)
            self.assertEqual(o["kind"], _larger_part(o), o)
        for s, o in zip(r.steps, r.outside):  # from the step's end (and the launcher's own work there) on
            self.assertGreaterEqual(o["t_ns"], s["t_ns"] + s["wall_ns"])
            self.assertEqual(o["evaluation_ns"] + o["checkpoint_ns"] + o["other_ns"], o["wall_ns"])
        for o, nxt in zip(r.outside, r.steps[1:]):
            self.assertEqual(o["t_ns"] + o["wall_ns"], nxt["t_ns"])
        self.assertEqual(r.done["summary"]["outside"]["intervals"], len(r.steps))

    def test_hogwild_children_train_and_the_parent_says_so(self):
        """The model in shared memory, two spawned torch.multiprocessing children train it while the parent
        waits: the parent makes no step, says so in one line, and ends with the script's own exit code."""
        r = CorpusRun(self, "hogwild", ["--epochs", "1"])
        (pcode, pout, perr), (lcode, lout, lerr) = r.plain, r.launched
        self.assertEqual((pcode, lcode), (0, 0), lerr[-2000:])

        def lines(out):
            # The children race (Hogwild): their losses and the accuracy differ, and their prints interleave,
            # even within a line (print writes the text and its newline apart: two children's lines once came
            # out as one): the records each printed, wherever the newlines fell.
            text = re.sub(r"\d+(\.\d+)?", "N", out)
            return sorted(re.findall(r"Train Epoch: N \[N/N \(N%\)\]\tLoss: N|Test set: [^\n]*", text))
        self.assertEqual(lines(lout), lines(pout))
        # Each child's records, counted wherever the newlines fell (a line-start count once saw 11 of 12).
        self.assertEqual(len(re.findall(r"\d\tTrain Epoch: ", r.plain[1])), 2 * 96 // 16)
        self.assertEqual(r.steps, [])
        said = [m for m in r.messages if m["type"] == "warning"]
        self.assertEqual([m.get("kind") for m in said], ["children"])
        self.assertEqual(said[0]["processes"], 2)
        self.assertTrue(said[0]["message"].startswith("the training runs in 2 child processes "
                                                      "(torch.multiprocessing); TuneBench measures "), said[0])
        self.assertNotIn("is this a training script", " ".join(m.get("message", "") for m in r.messages))
        summary = r.done["summary"]
        self.assertEqual((summary["steps"], summary["reason"]), (0, "completed"))
        self.assertIn("2 child processes", summary["no_steps"])
        self.assertEqual(summary["children"]["processes"], 2)
        self.assertGreater(summary["children"]["wall_ns"], 0)
        (o,) = r.outside  # the parent's test() at the end
        self.assertGreater(o["evaluation_ns"], 0, o)
        self.assertEqual(o["kind"], _larger_part(o), o)

    def test_hand_written_sgd_without_optimizer_or_dataloader(self):
        r = self.check("manual_sgd", r"^epoch \d+ it \d+ loss", args=["--out", "{tmp}"], samples=24,
                       optimizer_steps=0)
        self.assertTrue(all(s["update"] == "hand-written" for s in r.steps))  # `param -= ...` under no_grad
        self.assertEqual(len(r.outside), 3)  # the validation after each epoch; the save at the end
        self.assertEqual(r.outside[-1]["until"], "exit")
        self.assertGreater(r.outside[-1]["checkpoint_ns"], 0)
        self.assertTrue(all(o["evaluation_ns"] > 0 for o in r.outside))

    def test_a_script_that_raises_keeps_its_traceback_and_exit_code(self):
        r = self.check("diverges", r"^epoch \d+ iter \d+ loss", code=1, samples=16)
        self.assertEqual(r.launched[2], r.plain[2])  # all of stderr: the traceback without our frames
        err = next(m for m in r.messages if m["type"] == "error")
        self.assertEqual(err["message"], r.plain[2].strip().splitlines()[-1])
        self.assertNotIn("tunebench", err["traceback"])

    def test_image_folder_with_spawned_workers(self):
        images = self._image_folder()
        r = self.check("folder_spawn", r"^epoch \d+ iter \d+ loss", args=["--data", images, "--workers", "1"],
                       samples=8, optimizer_steps=1)
        # the workers start in the first step's data wait, as a loader refill is in the engine's
        self.assertGreater(r.steps[0]["data_wait_ns"], max(s["data_wait_ns"] for s in r.steps[1:]))

    def test_a_script_that_compiles_its_own_model(self):
        """model = torch.compile(model): TorchDynamo traces the forward the launcher's hooks wrap, and AOTAutograd
        makes its backward one compiled function (the aot_eager backend: TorchInductor's C++ build, ~20 s a
        process here, is bench/bench_compile.py's; its compiled call in place: the test after this one)."""
        self.check("compiled", r"^epoch \d+ iter \d+ loss", args=["--backend", "aot_eager"], samples=16,
                   optimizer_steps=1)

    def test_compile_knob_goes_back_to_eager_in_place(self):
        """The tuner measures compile=on against off in one process: off must give the model its eager call
        back, and on again its compiled call (no second compilation), with the same outputs. The knob's own
        Module.compile() with the aot_eager backend (_aot_eager): TorchInductor's C++ build of the same graphs took
        20-70 s of CPU here, and it is bench/bench_compile.py's."""
        import torch
        from tunebench.hooks import model as hooks_model

        self.enterContext(_aot_eager())
        run, m = _run_of_tiny_mlp(8)
        x = torch.randn(4, 8)
        eager = m(x)
        hooks_model.set_compile(run, True)
        compiled_call = m._compiled_call_impl
        self.assertIsNotNone(compiled_call)
        torch.testing.assert_close(m(x), eager)
        hooks_model.set_compile(run, False)
        self.assertIsNone(m._compiled_call_impl)
        torch.testing.assert_close(m(x), eager)
        hooks_model.set_compile(run, True)
        self.assertIs(m._compiled_call_impl, compiled_call)

    def test_amp_on_a_compiled_model(self):
        """A tune that kept compile=on then tried amp=bf16 on top: the autocast hooks were traced into the
        compiled forward and the step failed ("'autocast' object has no attribute 'prev'"). The hooks run
        eagerly now, and the compiled forward runs under autocast. TorchDynamo traces the hooks whatever the
        backend: aot_eager, as above."""
        import torch
        from tunebench.hooks import model as hooks_model

        self.enterContext(_aot_eager())
        run, m = _run_of_tiny_mlp(16)
        hooks_model.set_compile(run, True)
        hooks_model.set_amp(run, "bf16")
        x = torch.randn(4, 8)
        for _ in range(2):
            out = m(x)
            out.sum().backward()
        self.assertEqual(out.dtype, torch.float32)  # the loss outside the forward stays in fp32
        hooks_model.set_amp(run, "off")
        hooks_model.set_compile(run, False)
        self.assertEqual(m(x).dtype, torch.float32)

    # --- sequence models: the batch is the batch dimension ---------------------------------------------------
    def _text_corpus(self):
        """train/valid/test.txt of generated sentences; returns the directory and the train split's tokens."""
        import random
        d = tempfile.mkdtemp(prefix="tb-text-")
        self.addCleanup(shutil.rmtree, d, True)
        rng = random.Random(0)
        words = ["w%d" % i for i in range(60)]
        tokens = {}
        for name, lines in (("train", 160), ("valid", 30), ("test", 30)):
            with open(os.path.join(d, name + ".txt"), "w") as f:
                tokens[name] = 0
                for _ in range(lines):
                    sentence = [rng.choice(words) for _ in range(rng.randint(5, 15))]
                    f.write(" ".join(sentence) + "\n")
                    tokens[name] += len(sentence) + 1  # and <eos>
        return d, tokens["train"]

    def _word_language_model(self, arch):
        """Sequence-first (35, 20) batches from get_batch, no DataLoader, no optimizer: every step has its
        forward, backward and hand-written update, and counts its 20 sequences, not its 35 time steps."""
        data, train_tokens = self._text_corpus()
        r = self.check("word_lm", r"^\| epoch +\d+ \| +\d+/ *\d+ batches", args=["--data", data, "--model", arch],
                       samples=20, optimizer_steps=0)
        rows = train_tokens // 20  # batchify: one column per sequence
        lengths = [min(35, rows - 1 - i) for i in range(0, rows - 1, 35)]
        self.assertEqual([s["tokens"] for s in r.steps], [20 * n for n in lengths] * 3)
        for s in r.steps:
            self.assertEqual((s["unit"], s["update"]), ("sequences", "hand-written"), s)
            self.assertGreater(s["optim_ns"], 0, s)
        # each epoch's validation and the best model's torch.save are outside the steps
        self.assertEqual(len(r.outside), 3)
        self.assertTrue(all(o["evaluation_ns"] > 0 for o in r.outside))
        self.assertGreater(r.outside[0]["checkpoint_ns"], 0)

    def test_word_language_model_lstm_sequence_first_with_a_hand_written_update(self):
        self._word_language_model("LSTM")

    def test_word_language_model_transformer_encoder_sequence_first(self):
        self._word_language_model("Transformer")

    def test_rnn_classifier_batch_first_with_a_dataloader(self):
        r = self.check("rnn_classify", r"^epoch \d+ batch \d+ loss", samples=16, optimizer_steps=1)
        for s in r.steps:
            self.assertEqual((s["unit"], s["tokens"], s["update"]), ("sequences", 16 * 12, "optimizer"), s)
        self.assertEqual([o["epoch"] for o in r.outside], [1, 2])

    # --- failures: one clear line --------------------------------------------------------------------------
    def test_an_argparse_error_is_the_line_not_a_library_log_after_it(self):
        r = CorpusRun(self, "arch_cli", ["-a", "resnet50"])
        code, _, err = r.plain
        self.assertEqual(code, 2)
        self.assertEqual((r.launched[0], r.launched[2]), (code, err))
        lines = err.strip().splitlines()
        self.assertIn("DeviceProperties.cpp:48]", lines[-1])  # the library's log line comes last
        message = next(m for m in r.messages if m["type"] == "error")["message"]
        self.assertEqual(message, "arch_cli.py: error: argument -a/--arch: invalid choice: 'resnet50' (choose from "
                                  "'linear', 'mlp')")
        self.assertIn(message, lines)
        self.assertEqual(r.done["summary"], {"steps": 0, "reason": "error",
                                             "no_steps": "the script failed before its first training step"})

    def test_an_exception_in_the_loop_is_the_line_not_a_library_log_after_it(self):
        r = self.check("arch_cli", r"^epoch \d+ iter \d+ loss", args=["--lr", "50"], code=1, samples=16)
        lines = r.plain[2].strip().splitlines()
        self.assertIn("DeviceProperties.cpp:48]", lines[-1])
        message = next(m for m in r.messages if m["type"] == "error")["message"]
        self.assertEqual(message, lines[-2])  # the traceback's last line
        self.assertTrue(message.startswith("FloatingPointError: loss is "), message)

    def test_a_missing_dataset_path(self):
        r = CorpusRun(self, "folder_spawn", ["--data", "/nonexistent/tunebench-dataset"])
        self.assertEqual(r.launched[0], r.plain[0])
        self.assertNotEqual(r.plain[0], 0)
        self.assertEqual(r.launched[2], r.plain[2])
        err = next(m for m in r.messages if m["type"] == "error")
        self.assertEqual(err["message"], r.plain[2].strip().splitlines()[-1])
        self.assertIn("/nonexistent/tunebench-dataset", err["message"])
        self.assertEqual(r.done["summary"], {"steps": 0, "reason": "error",
                                             "no_steps": "the script failed before its first training step"})

    def test_a_syntax_error(self):
        d = tempfile.mkdtemp(prefix="tb-corpus-")
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, "broken.py")
        with open(path, "w") as f:
            f.write("import torch\n\nfor epoch in range(3)\n    print(epoch)\n")
        r = CorpusRun(self, path=path)
        self.assertEqual(r.launched[0], r.plain[0])
        self.assertNotEqual(r.plain[0], 0)
        self.assertEqual(r.launched[2], r.plain[2])
        err = next(m for m in r.messages if m["type"] == "error")
        self.assertNotIn("\n", err["message"])
        self.assertIn("SyntaxError", err["message"])
        self.assertIn("broken.py, line 3", err["message"])

    def test_a_script_that_stops_making_steps_is_named_where_it_waits(self):
        d = tempfile.mkdtemp(prefix="tb-corpus-")
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, "stuck.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent("""\
                import threading
                import torch
                model = torch.nn.Linear(4, 1)
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                batches = threading.Event()
                for i in range(100):
                    if i == 3:
                        batches.wait()  # a producer that never comes
                    loss = model(torch.randn(8, 4)).pow(2).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                """))
        c = Child(path, launcher_args=["--stall-warn", "1.5"], env=ENV, cwd=d)
        try:
            # The stall after the steps. A slow start-up may bring its own stall warnings first: "no training
            # step yet", or on a loaded machine one at the optimizer's construction (line 4, a CI run).
            w = c.until(lambda m: m["type"] == "warning" and m.get("kind") == "stalled" and
                        "no training step for" in m["message"] and m.get("line") == 8, timeout=60)
            self.assertIsNotNone(w, c.messages)
            self.assertNotIn("\n", w["message"])
            self.assertEqual((w["file"], w["line"]), (path, 8))
            self.assertIn("batches.wait()", w["message"])
            self.assertIn("no training step for", w["message"])
            self.assertEqual(sum(1 for m in c.messages if m["type"] == "step"), 2)  # the 3rd is in progress
        finally:
            c.p.kill()
            c.p.communicate()

    def _image_folder(self):
        from PIL import Image
        import numpy as np
        d = tempfile.mkdtemp(prefix="tb-images-")
        self.addCleanup(shutil.rmtree, d, True)
        rng = np.random.default_rng(0)
        for cls in ("cat", "dog"):
            os.makedirs(os.path.join(d, cls))
            for i in range(12):
                Image.fromarray(rng.integers(0, 255, (20, 20, 3), dtype=np.uint8)).save(
                    os.path.join(d, cls, "%d.png" % i))
        return d


if __name__ == "__main__":
    unittest.main()
