"""The texts of torch._dynamo's structured trace, read into one line each (hooks/compile_events.py uses them).

  recompile_reasons          a string, or a list of them as JSON lines ("[\\n"...",\\n"..."\\n]"): each the guard
                             failure of one cached compile, "F/C: tensor 'x' size mismatch at index 1. expected 8,
                             actual 12" (the most recent cache entry first), "F/C: GLOBAL_STATE changed:
                             grad_mode" for an entry made under another grad mode.
  dynamo_graph_break_reason  the user stack (`File "train.py", line 18, in forward` lines; after "User code
                             traceback:" or "...in the following user code:") then a Python traceback whose last
                             exception line is the break's reason ("torch._dynamo.exc.Unsupported: Unsupported
                             Tensor.item() call ..."). Its place is the innermost frame of that stack outside
                             torch's package (and ours): the script's line, not torch's module code that called it.
"""

import json
import os
import re

import torch

_ID = re.compile(r"^\d+/\d+: ")
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in ')
_AT = re.compile(r"Graph break in user code at (.+):(\d+)\s*$", re.M)
_EXC = re.compile(r"^([A-Za-z_][\w.]*)(?:: (.*))?$")
_TRACEBACK = "Traceback (most recent call last):"
_GLOBAL_STATE = "GLOBAL_STATE changed"
_LIMIT = 400
_NOT_USER = tuple(os.path.dirname(os.path.abspath(f)) + os.sep  # torch's package and ours
                  for f in (torch.__file__, os.path.dirname(os.path.abspath(__file__))))


def one_line(text, limit=_LIMIT):
    """The first non-empty line, whitespace runs folded; a line that ends in ':' ("backend='x' raised:") gets
    the next one too. At most `limit` characters."""
    lines = [" ".join(s.split()) for s in str(text).splitlines()]
    lines = [s for s in lines if s]
    if not lines:
        return ""
    out = lines[0]
    if out.endswith(":") and len(lines) > 1:
        out += " " + lines[1]
    return out if len(out) <= limit else out[:limit - 3] + "..."


def recompile_reason(payload):
    """The guard failure that made a recompile, one line without its "F/C: " prefix (None: none given): the
    first, unless it is a cache entry's made under another global state (a `no_grad` validation's entry says
    "GLOBAL_STATE changed: grad_mode" first when the training graph's input grew): then the first of an entry
    made under this one, which says what changed for this call."""
    reasons = payload
    if isinstance(payload, str) and payload[:1] in ("[", '"'):
        try:
            reasons = json.loads(payload)
        except ValueError:
            reasons = payload
    if not isinstance(reasons, list):
        reasons = [reasons]
    reasons = [_ID.sub("", r.strip(), count=1) for r in reasons if isinstance(r, str) and r.strip()]
    if not reasons:
        return None
    same_state = [r for r in reasons if not r.startswith(_GLOBAL_STATE)]
    return one_line((same_state or reasons)[0]) or None


def _user(path):
    return not path.startswith("<") and not os.path.abspath(path).startswith(_NOT_USER)


def graph_break(payload):
    """{"reason", "file", "line"} of a dynamo_graph_break_reason payload (None: not one)."""
    if not isinstance(payload, str) or not payload.strip():
        return None
    tb = payload.find(_TRACEBACK)
    stack = payload if tb < 0 else payload[:tb]
    file = line = None
    for s in stack.splitlines():
        m = _FRAME.match(s)
        if m and _user(m.group(1)):
            file, line = m.group(1), int(m.group(2))  # the last one is the innermost
    if file is None:
        m = _AT.search(stack)
        if m:
            file, line = m.group(1), int(m.group(2))
    return {"reason": _reason(payload, tb), "file": file, "line": line}


def _reason(payload, tb):
    """The traceback's exception message (its first line, without the exception's type), else the text's own
    "Graph Break Reason:" line."""
    if tb >= 0:
        rest = payload[payload.rfind(_TRACEBACK):].splitlines()[1:]
        for i, s in enumerate(rest):
            if not s.strip() or s[:1].isspace():
                continue  # a frame, its source, its carets
            m = _EXC.match(s.strip())
            if m and m.group(2):
                return one_line("\n".join([m.group(2)] + rest[i + 1:i + 3]))
            break
    for s in payload.splitlines():
        if s.startswith("Graph Break Reason:"):
            at = payload.find(s)
            return one_line(payload[at + len("Graph Break Reason:"):])
    return one_line(payload)
