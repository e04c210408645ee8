"""What torch.compile did, as the launcher reports it (hooks/compile_events.py): scripts that compile their model
as people write them, run under the launcher as the C++ parent runs it (tests/launch_util.Child). A graph break
(a data-dependent `if` on `.item()`) named with the script's line; a recompile when the sequence length grows,
naming the size mismatch and its dimension, and a validation pass's recompile that no step counts; a clean compile
and its lazily compiled backward, counted in the step that made them; Inductor's phases inside its compile.
The first three use backend="aot_eager" (no Inductor: a compile in well under a second here); the last one
compiles a tiny model with Inductor (~10 s of CPU here, most of it torch's check of the CPU's vector ISA, cache or
not). No assertion reads the clock beyond the messages' own consistency: each compile lies inside the step whose
`compile_ns` counts it, or inside none and counted by none. The texts of torch's records: CompileText and
InductorKernelText (Inductor's kernels, which a traced run's compiles carry: tests/engine/test_e2e_compile.cpp)."""

import json
import os
import re
import sys
import textwrap
import types
import unittest

from tests.launch_util import Child, ScriptTest
from tunebench.hooks import compile_kernels, compile_text

PHASES = {"dynamo", "aot", "inductor", "codegen", "guards"}

GRAPH_BREAK = '''
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 4)

        def forward(self, x):
            h = torch.relu(self.fc1(x))
            if h.abs().mean().item() > 10.0:  # data-dependent: Dynamo breaks the graph here
                h = h / 2
            return self.fc2(h)


    torch.manual_seed(0)
    model = torch.compile(Net(), backend="aot_eager")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(TensorDataset(torch.randn(48, 16), torch.randint(0, 4, (48,))), batch_size=8)
    for x, y in loader:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
'''

# Batches that grow longer every epoch, and a validation pass after each (no_grad: a recompile outside the steps,
# before the next epoch's steps).
RECOMPILE = '''
    import torch
    from torch import nn

    VOCAB = 50


    class TinyLM(nn.Module):
        def __init__(self, dim=16):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, dim)
            self.out = nn.Linear(dim, VOCAB)

        def forward(self, tokens):
            return self.out(torch.tanh(self.emb(tokens)))


    torch.manual_seed(0)
    model = torch.compile(TinyLM(), backend="aot_eager")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        seq = 8 + 4 * epoch
        model.train()
        for step in range(3):
            tokens = torch.randint(0, VOCAB, (4, seq + 1))
            logits = model(tokens[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            val = model(torch.randint(0, VOCAB, (4, seq)))
        print("epoch", epoch, "val", float(val.mean()))
'''

CLEAN = '''
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset


    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3))

        def forward(self, x):
            return self.net(x)


    torch.manual_seed(0)
    model = torch.compile(MLP(), backend=BACKEND)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = DataLoader(TensorDataset(torch.randn(48, 20), torch.randint(0, 3, (48,))), batch_size=12)
    for epoch in range(EPOCHS):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
'''


# Inductor's phases on the least it can build: a preprocessing function whose one op Inductor hands to ATen's
# matrix multiply (an extern kernel: its wrapper is Python, no C++ to compile), no parameters, no backward. The
# MLP's forward and backward made g++ build Inductor's kernels on a cold cache: 26-34 s; this, 5 s.
INDUCTOR = '''
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset


    @torch.compile(backend="inductor")
    def normalize(x):
        return torch.mm(x, x.t())


    torch.manual_seed(0)
    model = nn.Linear(12, 3)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    loader = DataLoader(TensorDataset(torch.randn(48, 20), torch.randint(0, 3, (48,))), batch_size=12)
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(normalize(x)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
'''


def line_of(text, snippet):
    lines = textwrap.dedent(text).splitlines()
    return next(n for n, s in enumerate(lines, 1) if snippet in s)


class CompileEvents(ScriptTest):
    def run_script(self, name, text, relative=False):
        """relative: started as `train.py` from its folder, as a user types it; the messages name it absolutely."""
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        c = Child(name, cwd=self.dir.name) if relative else Child(path)
        code, _, err = c.finish(timeout=300)
        self.assertEqual(code, 0, err)
        steps = [m for m in c.messages if m["type"] == "step"]
        compiles = [m for m in c.messages if m["type"] == "compile"]
        self.assertTrue(steps)
        for m in compiles:
            self.assertEqual(set(m) - {"v", "type"}, {"id", "frame", "file", "line", "t_ns", "dur_ns", "backward",
                                                       "phases", "recompile", "graph_breaks", "failed",
                                                       "kernels"}, m)
            self.assertRegex(m["id"], r"^\d+/\d+$")
            self.assertIsNone(m["failed"], m)
            for p in m["phases"]:
                self.assertIn(p["name"], PHASES, m)
                self.assertTrue(m["t_ns"] <= p["t_ns"] and p["t_ns"] + p["dur_ns"] <= m["t_ns"] + m["dur_ns"], m)
            self.assertEqual(m["phases"], sorted(m["phases"], key=lambda p: p["t_ns"]))
        # The script's own frames (the launcher's global forward hooks are compiled too, as frames of its own).
        return path, steps, compiles, [m for m in compiles if m["file"] == path]

    def assert_counted_by_their_steps(self, steps, compiles):
        """Each compile lies inside one step, which counts it in compile_ns, or overlaps none and is counted by
        none; a step's compile_ns is the sum of the compiles inside it. Returns the compiles inside no step."""
        counted, outside = [0] * len(steps), []
        for m in compiles:
            t0, t1 = m["t_ns"], m["t_ns"] + m["dur_ns"]
            inside = [i for i, s in enumerate(steps) if s["t_ns"] <= t0 and t1 <= s["t_ns"] + s["wall_ns"]]
            overlap = [i for i, s in enumerate(steps) if t0 < s["t_ns"] + s["wall_ns"] and s["t_ns"] < t1]
            self.assertEqual(overlap, inside, m)
            for i in inside:
                counted[i] += m["dur_ns"]
            if not inside:
                outside.append(m)
        self.assertEqual([s["compile_ns"] for s in steps], counted)
        return outside

    def test_a_graph_break_names_its_reason_and_the_scripts_line(self):
        path, steps, compiles, mine = self.run_script("graph_break.py", GRAPH_BREAK, relative=True)
        forward = [m for m in mine if m["frame"] == "forward" and not m["backward"]]
        self.assertTrue(forward, compiles)
        first = forward[0]
        self.assertEqual(first["line"], line_of(GRAPH_BREAK, "def forward"))
        self.assertEqual(len(first["graph_breaks"]), 1, first)
        brk = first["graph_breaks"][0]
        self.assertRegex(brk["reason"], r"^[^:\n]*Tensor\.item\(\)")  # the exception's words, not a preamble
        self.assertEqual((brk["file"], brk["line"]), (path, line_of(GRAPH_BREAK, "if h.abs().mean().item()")))
        self.assertIsNone(first["recompile"])
        # The rest of forward after the break is a frame of its own, compiled without a break; both have a backward.
        resumed = [m for m in mine if m["frame"].startswith("torch_dynamo_resume_in_forward") and not m["backward"]]
        self.assertTrue(resumed, compiles)
        self.assertEqual(resumed[0]["graph_breaks"], [])
        self.assertTrue({m["id"] for m in mine if m["backward"]} >= {first["id"], resumed[0]["id"]}, mine)
        self.assert_counted_by_their_steps(steps, compiles)

    def test_a_recompile_names_the_size_that_changed(self):
        path, steps, compiles, mine = self.run_script("recompile.py", RECOMPILE)
        forward = [m for m in mine if m["frame"] == "forward" and not m["backward"]]
        frame = forward[0]["id"].split("/")[0]
        self.assertEqual(forward[0]["id"], frame + "/0")
        self.assertIsNone(forward[0]["recompile"])
        self.assertEqual([m["id"].split("/")[0] for m in forward], [frame] * len(forward))
        # The length grew at the second epoch: a recompile of the same frame, naming dimension 1 of its input.
        grew = [m for m in forward[1:] if m["recompile"] and "size mismatch" in m["recompile"]]
        self.assertTrue(grew, forward)
        self.assertRegex(grew[0]["recompile"], r"^tensor 'tokens' size mismatch at index 1\. expected 8, actual 12$")
        self.assertTrue(all(m["recompile"] for m in forward[1:]), forward)
        self.assertTrue(all(int(m["id"].split("/")[1]) > 0 for m in forward[1:]), forward)
        # The first validation pass recompiles outside the steps (grad mode changed): said, and no step counts it,
        # not even the next epoch's first step.
        outside = self.assert_counted_by_their_steps(steps, compiles)
        self.assertTrue([m for m in outside if m["file"] == path and "grad_mode" in (m["recompile"] or "")], compiles)
        self.assertTrue(any(m["t_ns"] < steps[-1]["t_ns"] for m in outside), (outside, steps))

    def test_a_clean_compile_and_its_backward_are_the_first_steps_compile_time(self):
        path, steps, compiles, mine = self.run_script(
            "clean.py", CLEAN.replace("BACKEND", '"aot_eager"').replace("EPOCHS", "2"))
        self.assertEqual([(m["frame"], m["backward"]) for m in mine], [("forward", False), ("forward", True)], mine)
        fwd, bwd = mine
        self.assertEqual((fwd["id"], bwd["id"]), (fwd["id"], fwd["id"]))
        self.assertEqual((fwd["file"], fwd["line"]), (path, line_of(CLEAN, "def forward")))
        self.assertEqual((bwd["file"], bwd["line"]), (fwd["file"], fwd["line"]))
        for m in mine:
            self.assertIsNone(m["recompile"])
            self.assertEqual(m["graph_breaks"], [])
            self.assertGreater(m["dur_ns"], 0)
        self.assertTrue({"dynamo", "aot", "guards"} <= {p["name"] for p in fwd["phases"]}, fwd)
        self.assertLess(fwd["t_ns"] + fwd["dur_ns"], bwd["t_ns"])
        self.assertEqual(self.assert_counted_by_their_steps(steps, compiles), [])
        self.assertEqual([i for i, s in enumerate(steps) if s["compile_ns"]], [0])
        self.assertEqual(sum(s["compile_ns"] for s in steps), sum(m["dur_ns"] for m in compiles))

    def test_inductors_phases_lie_inside_its_compile(self):
        # Inductor's cache (/tmp/torchinductor_<user>) may hold this graph or not: a hit loads what a miss builds
        # (AOTAutogradCache.inductor_load instead of create_aot_dispatcher_function and inductor_compile), and its
        # backward comes with it; a miss compiles the backward at the first backward. Either way dynamo, inductor,
        # codegen and guards ran inside the forward's compile.
        path, steps, compiles, mine = self.run_script("inductor.py", INDUCTOR)
        fwd = [m for m in mine if not m["backward"]]
        self.assertEqual([m["frame"] for m in fwd], ["normalize"], mine)
        self.assertTrue({"dynamo", "inductor", "codegen", "guards"} <= {p["name"] for p in fwd[0]["phases"]}, fwd)
        self.assertTrue(all(m["id"] == fwd[0]["id"] for m in mine), mine)
        self.assertEqual(self.assert_counted_by_their_steps(steps, compiles), [])
        self.assertEqual([i for i, s in enumerate(steps) if s["compile_ns"]], [0])


# A model that is torch's own container, compiled by the `compile` knob (--set compile=on), not by the script.
SEQUENTIAL = '''
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    for step in range(6):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
'''


class CompileKnob(ScriptTest):
    def test_the_knob_compiles_a_model_whose_forward_is_torchs(self):
        """Module.compile() compiles nothing for an nn.Sequential (torch 2.11: Dynamo does not compile torch's own
        _call_impl as a top frame there), so compile=on measured an eager model. The knob's frame is compiled, and
        the compile lane names it for the model's class and the script's line that calls it."""
        path = os.path.join(self.dir.name, "seq.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent(SEQUENTIAL))
        # aot_eager (TUNEBENCH_COMPILE_BACKEND): the frame the knob compiles is the same, without Inductor's code
        # generation (a cold cache made this test 31 s).
        c = Child(path, launcher_args=["--set", "compile=on"],
                  env=dict(os.environ, TUNEBENCH_COMPILE_BACKEND="aot_eager"))
        code, _, err = c.finish(timeout=300)
        self.assertEqual(code, 0, err)
        compiles = [m for m in c.messages if m["type"] == "compile"]
        knob = [m for m in compiles if m["frame"] == "Sequential (compile=on)" and not m["backward"]]
        self.assertEqual(len(knob), 1, compiles)
        self.assertEqual((knob[0]["file"], knob[0]["line"]), (path, line_of(SEQUENTIAL, "model(x)")))
        self.assertIsNone(knob[0]["failed"], knob[0])
        self.assertTrue({"dynamo", "aot"} <= {p["name"] for p in knob[0]["phases"]}, knob[0])
        steps = [m for m in c.messages if m["type"] == "step"]
        self.assertTrue(any(s["compile_ns"] >= knob[0]["dur_ns"] for s in steps), steps)


class CompileText(unittest.TestCase):
    """torch 2.11's texts, as its records carried them here."""

    def test_a_recompile_reason_is_the_first_guard_failure_without_its_compile_id(self):
        reason = compile_text.recompile_reason
        x4 = "tensor 'x' size mismatch at index 0. expected 4, actual 6"
        self.assertEqual(reason("0/0: " + x4), x4)
        h4 = "tensor 'h' size mismatch at index 0. expected 4, actual 6"
        self.assertEqual(reason('[\n"1/1: %s",\n"1/0: ___stack0 == 0.37"\n]' % h4), h4)
        self.assertIsNone(reason(None))
        # A no_grad validation's entry fails on grad mode, first: the training entry's failure says what changed.
        grew = "tensor 'tokens' size mismatch at index 1. expected 8, actual 12"
        self.assertEqual(reason('[\n"1/1: GLOBAL_STATE changed: grad_mode",\n"1/0: %s"\n]' % grew), grew)
        self.assertEqual(reason("1/0: GLOBAL_STATE changed: grad_mode"), "GLOBAL_STATE changed: grad_mode")

    def test_a_graph_break_is_placed_at_the_innermost_frame_outside_torch(self):
        torch_dir = os.path.dirname(compile_text._NOT_USER[0].rstrip(os.sep))
        mod = os.path.join(torch_dir, "torch", "nn", "modules", "module.py")
        payload = ("Graph break in user code at /w/helpers.py:7\nGraph Break Reason: Encountered graph break when "
                   "attempting to trace CALL: a function call, e.g. f(x, y):\n\nUnsupported Tensor.item() call\n\n"
                   "User code traceback:\n"
                   '  File "/w/train.py", line 30, in <module>\n    loss = model(x).sum()\n'
                   '  File "%s", line 1790, in _call_impl\n    return forward_call(*args, **kwargs)\n'
                   '  File "/w/train.py", line 18, in forward\n    h = helpers.gate(h)\n'
                   '  File "/w/helpers.py", line 7, in gate\n    if h.mean().item() > 0:\n\n'
                   "Traceback (most recent call last):\n"
                   '  File "%s", line 1001, in wrapper\n    return inner_fn(self, inst)\n           ^^^^^^^\n'
                   "torch._dynamo.exc.Unsupported: Unsupported Tensor.item() call with capture_scalar_outputs=False\n"
                   "  Explanation: Dynamo does not support tracing `Tensor.item()`.\n" % (mod, mod))
        self.assertEqual(compile_text.graph_break(payload), {
            "reason": "Unsupported Tensor.item() call with capture_scalar_outputs=False", "file": "/w/helpers.py",
            "line": 7})

    def test_a_failure_is_one_line_that_says_what_failed(self):
        self.assertEqual(compile_text.one_line("backend='bad' raised:\nRuntimeError: backend exploded\nmore"),
                         "backend='bad' raised: RuntimeError: backend exploded")
        self.assertEqual(compile_text.one_line("\n  a   b\nc"), "a b")
        self.assertTrue(len(compile_text.one_line("x" * 1000)) <= 400)
        self.assertIsNotNone(re.match(r"^x+\.\.\.$", compile_text.one_line("x" * 1000)))


# torch 2.11's generated module for `y = relu(fc(x) + 1); return (y * 2).sum()` on a CPU with kernel profiling on,
# cut to what is read (the kernel's C++ body elided), and a Triton kernel's definition as Inductor writes it on a
# GPU; then the provenance artifact of that compile.
OUTPUT_CODE = """
# AOT ID: ['0_forward']
from torch._inductor.async_compile import AsyncCompile
async_compile = AsyncCompile()


cpp_fused_add_mul_relu_sum_threshold_backward_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r'''
#include <torch/csrc/inductor/aoti_runtime/utils.h>
extern "C"  void  kernel(const float* in_ptr0,
                       float* out_ptr0)
{
    torch::aot_inductor::RAIIAtenRecordFunctionHandle record_graph_0_cpp_fused_add_mul_relu_sum_threshold_backward_0_("graph_0_cpp_fused_add_mul_relu_sum_threshold_backward_0", nullptr);
}
''')


# kernel path: /tmp/torchinductor_root/ab/cabc.py
# Topologically Sorted Source Nodes: [y, relu], Original ATen: [aten.addmm, aten.relu]
# Source node to ATen node mapping:
#   relu => relu
triton_poi_fused_addmm_relu_1 = async_compile.triton('triton_poi_fused_addmm_relu_1', '''
import triton
''', device_str='cuda')


async_compile.wait(globals())
del async_compile

class Runner:
    def call(self, args):
        # Topologically Sorted Source Nodes: [y], Original ATen: [aten.t, aten.addmm]
        # [Provenance debug handles] extern_kernels.addmm:1
        extern_kernels.addmm(primals_2, primals_3, reinterpret_tensor(primals_1, (8, 8), (1, 8), 0), out=buf0)
        cpp_fused_add_mul_relu_sum_threshold_backward_0(buf0, buf1, buf2)
"""
PROVENANCE = json.dumps({
    "extern_kernels.addmm:1": ['  File "/w/train.py", line 18, in forward\n    y = s.fc(x)\n'],
    "cpp_fused_add_mul_relu_sum_threshold_backward_0:2": [
        '  File "/w/train.py", line 20, in forward\n    return (y * 2).sum()\n',
        '  File "/w/train.py", line 19, in forward\n    y = torch.relu(y + 1)\n'],
    "triton_poi_fused_addmm_relu_1:3": [
        '  File "/w/train.py", line 31, in <module>\n    loss = model(x)\n'
        '  File "%s", line 1790, in _call_impl\n    return forward_call(*args, **kwargs)\n'
        '  File "/w/model.py", line 7, in forward\n    return torch.relu(self.fc(x))\n' % os.path.join(
            os.path.dirname(compile_text._NOT_USER[0].rstrip(os.sep)), "torch", "nn", "modules", "module.py")]})


class InductorKernelText(unittest.TestCase):
    """Inductor's kernels in torch 2.11's texts (hooks/compile_kernels.py)."""

    def test_the_generated_code_names_each_kernel_its_range_and_the_ops_its_comment_says(self):
        kernels = compile_kernels.output_code(OUTPUT_CODE)
        self.assertEqual(list(kernels), ["cpp_fused_add_mul_relu_sum_threshold_backward_0",
                                         "triton_poi_fused_addmm_relu_1"])
        cpp = kernels["cpp_fused_add_mul_relu_sum_threshold_backward_0"]
        self.assertEqual(cpp["range"], "graph_0_cpp_fused_add_mul_relu_sum_threshold_backward_0")
        self.assertEqual(cpp["ops"], [])  # a C++ kernel's code says none: its name does (the analysis reads it)
        triton = kernels["triton_poi_fused_addmm_relu_1"]
        self.assertEqual((triton["range"], triton["ops"]), ("triton_poi_fused_addmm_relu_1", ["addmm", "relu"]))
        self.assertEqual(compile_kernels.output_code(None), {})

    def test_provenance_gives_each_kernel_the_users_lines_innermost_outside_torch_in_the_scripts_order(self):
        kernels = compile_kernels.output_code(OUTPUT_CODE)
        compile_kernels.provenance(PROVENANCE, kernels)
        self.assertNotIn("extern_kernels.addmm", kernels)  # an ATen call, named as the op in a trace
        self.assertEqual(kernels["cpp_fused_add_mul_relu_sum_threshold_backward_0"]["lines"], [
            {"file": "/w/train.py", "line": 19, "code": "y = torch.relu(y + 1)"},
            {"file": "/w/train.py", "line": 20, "code": "return (y * 2).sum()"}])
        self.assertEqual(kernels["triton_poi_fused_addmm_relu_1"]["lines"], [
            {"file": "/w/model.py", "line": 7, "code": "return torch.relu(self.fc(x))"}])
        # A kernel the code did not show (a cache's other graph) still gets its lines; garbage changes nothing.
        other = {}
        compile_kernels.provenance(json.dumps({"cpp_fused_mul_0:9": ['  File "/w/t.py", line 3, in f\n    x\n']}),
                                   other)
        self.assertEqual(other["cpp_fused_mul_0"]["lines"], [{"file": "/w/t.py", "line": 3, "code": "x"}])
        compile_kernels.provenance("not json", other)
        compile_kernels.provenance(json.dumps([1, 2]), other)
        self.assertEqual(list(other), ["cpp_fused_mul_0"])

    def test_a_trace_switches_on_kernel_profiling_and_provenance_before_or_after_the_compiler_is_imported(self):
        saved = {k: os.environ.pop(k, None) for k in compile_kernels._ENV}
        config = sys.modules.pop("torch._inductor.config", None)
        try:
            compile_kernels.enable_for_trace()  # not imported: Inductor reads the environment when it is
            self.assertEqual({k: os.environ.get(k) for k in compile_kernels._ENV},
                             {"TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE": "1", "INDUCTOR_PROVENANCE": "1"})
            fake = types.SimpleNamespace(cpp=types.SimpleNamespace(enable_kernel_profile=False),
                                         trace=types.SimpleNamespace(provenance_tracking_level=0))
            sys.modules["torch._inductor.config"] = fake
            compile_kernels.enable_for_trace()  # imported: its settings
            self.assertEqual((fake.cpp.enable_kernel_profile, fake.trace.provenance_tracking_level), (True, 1))
        finally:
            sys.modules.pop("torch._inductor.config", None)
            if config is not None:
                sys.modules["torch._inductor.config"] = config
            for k, v in saved.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v


if __name__ == "__main__":
    unittest.main()
