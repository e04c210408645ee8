"""Inductor's kernels back to their source ops and the user's lines (hooks/compile_events.py sends them in the
`compile` message's `kernels`, docs/protocol.md).

What is read (torch 2.11), from the structured trace compile_events.py already listens to:
  * "inductor_output_code": the generated module, sent for a compile and again when a cache gives it. Each
    kernel is a line `NAME = async_compile.cpp_pybinding(...` (C++ on a CPU) or `async_compile.triton('NAME'`
    (a GPU). A Triton kernel's comment block above it says `# Topologically Sorted Source Nodes: [...],
    Original ATen: [aten.addmm, aten.relu]`: its ops. A C++ kernel has no such comment; its name says its ops
    (descriptive_names: cpp_fused_add_relu_0), which the analysis reads. With kernel profiling on, a C++ kernel
    records a range named `graph_G_NAME` (G: the AOT graph, shared by a forward and its backward): that name,
    as the code spells it, is the kernel's `range`.
  * "inductor_provenance_tracking_kernel_stack_traces" (an artifact, sent only while Inductor's provenance
    tracking is on): {"NAME:HANDLE": ["  File \\"train.py\\", line 19, in forward\\n    y = relu(y)\\n", ...]}, the
    user's stacks of the graph nodes each kernel holds. Each stack's innermost frame outside torch (and us) is
    one of the kernel's lines.

Both are switched on for a traced run by enable_for_trace(): a trace of compiled code without them has the
compiled regions and nothing inside them on a CPU, and kernels with no line anywhere.
"""

import json
import os
import re
import sys

from . import compile_text

_MAX_KERNELS = 512   # in one compile (a pathological graph)
_MAX_LINES = 8       # a kernel's user lines
_MAX_OPS = 32

_DEF = re.compile(r"^(\w+) = async_compile\.(\w+)\(", re.M)
_RECORD = re.compile(r'RAIIAtenRecordFunctionHandle \w+\("([^"]+)"')
_SOURCES = re.compile(r"Source Nodes: \[[^\]]*\], Original ATen: \[([^\]]*)\]")
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in [^\n]*\n?([^\n]*)')
_HANDLE = re.compile(r":\d+$")

# Inductor reads both once, when its config is first imported (a kernel's profiling is fixed when its code is
# generated). The config's import costs 1.6 s here, so a run that never compiles should not pay it: the
# environment says it when the script has not imported the compiler yet.
_ENV = {"TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE": "1", "INDUCTOR_PROVENANCE": "1"}


def enable_for_trace():
    """Switches on Inductor's C++ kernel profiling and its provenance tracking for the rest of the process (and
    the processes it starts). Kernel profiling is in Inductor's cache key, so a traced run compiles its own
    kernels once, and each call of a C++ kernel then enters a record_function (measured in docs/analysis.md)."""
    cfg = sys.modules.get("torch._inductor.config")
    if cfg is not None:
        cfg.cpp.enable_kernel_profile = True
        cfg.trace.provenance_tracking_level = max(1, int(cfg.trace.provenance_tracking_level or 0))
        return
    for k, v in _ENV.items():
        os.environ.setdefault(k, v)


def _ops(comment):
    m = None
    for m in _SOURCES.finditer(comment):
        pass
    if m is None:
        return []
    ops = []
    for op in m.group(1).split(","):
        op = op.strip()
        op = op[5:] if op.startswith("aten.") else op
        if op and op not in ops and len(ops) < _MAX_OPS:
            ops.append(op)
    return ops


def output_code(code):
    """{name: {"name", "range", "ops"}} of a generated module's kernels, in the order it defines them."""
    kernels = {}
    if not isinstance(code, str):
        return kernels
    defs = list(_DEF.finditer(code))
    for i, m in enumerate(defs):
        if len(kernels) >= _MAX_KERNELS:
            break
        name, kind = m.group(1), m.group(2)
        if kind not in ("cpp_pybinding", "cpp", "triton"):
            continue
        body = code[m.end():defs[i + 1].start() if i + 1 < len(defs) else len(code)]
        record = _RECORD.search(body)
        # the comment block right above the definition (a Triton kernel's ops)
        above = code[:m.start()].rstrip("\n").split("\n")
        comment = []
        while above and above[-1].startswith("#"):
            comment.append(above.pop())
        kernels[name] = {"name": name, "range": record.group(1) if record else name,
                         "ops": _ops("\n".join(reversed(comment))), "lines": []}
    return kernels


def stack_lines(stacks):
    """[{file, line, code}] of a kernel's stacks: each one's innermost frame outside torch (and us), once."""
    out = []
    for s in stacks if isinstance(stacks, list) else []:
        if not isinstance(s, str):
            continue
        last = None
        for m in _FRAME.finditer(s):
            if compile_text._user(m.group(1)):
                last = {"file": m.group(1), "line": int(m.group(2)), "code": compile_text.one_line(m.group(3), 160)}
        if last is not None and last not in out and len(out) < _MAX_LINES:
            out.append(last)
    return out


def provenance(payload, kernels):
    """Adds the user's lines of a provenance artifact (JSON text) to `kernels` (output_code's). A kernel the
    code did not show (another graph's) is added with its name alone."""
    try:
        traces = json.loads(payload) if isinstance(payload, str) else payload
    except ValueError:
        return
    if not isinstance(traces, dict):
        return
    for key, stacks in traces.items():
        if not isinstance(key, str):
            continue
        name = _HANDLE.sub("", key)
        if name.startswith("extern_kernels."):
            continue  # an ATen call (addmm): the trace names it as the op it is
        k = kernels.get(name)
        if k is None:
            if len(kernels) >= _MAX_KERNELS:
                continue
            k = kernels[name] = {"name": name, "range": name, "ops": [], "lines": []}
        for line in stack_lines(stacks):
            if line not in k["lines"] and len(k["lines"]) < _MAX_LINES:
                k["lines"].append(line)
        k["lines"].sort(key=lambda x: (x["file"], x["line"]))  # the stacks come in no order of the script's
