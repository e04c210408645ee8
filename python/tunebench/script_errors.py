"""A script's failure as Python itself would show it: the traceback from the script's first frame on (runpy's
and the launcher's frames left out), and the one line a parent shows.

That line is the script's own last error - its exception's `Type: message`, argparse's `prog: error: ...`,
the text of sys.exit("..."), or the exit code and the script's line that exited - taken from the exception
itself, never from the last line on stderr: a library's log line (torch's C++ warnings print
`ERROR: ... DeviceProperties.cpp:48] ...` on a machine without a GPU, at import or at exit) can come after it."""

import argparse
import linecache
import os
import re

_ARGPARSE_EXIT = argparse.ArgumentParser.exit.__code__


def script_traceback(tb, script):
    """The traceback from the script's first frame on: what `python script.py` prints (runpy's and our frames
    dropped). None when the error is not inside the script's code (a SyntaxError: Python prints no frames)."""
    script = os.path.abspath(script)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != script:
        tb = tb.tb_next
    return tb


# A terminal's colour and bold codes (torch.load's weights-only error has some): not text a parent can show.
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _type_name(t):
    """The exception type as Python's traceback prints it: qualified by its module, unless builtins/__main__."""
    name = getattr(t, "__qualname__", t.__name__)
    module = getattr(t, "__module__", None)
    if not isinstance(module, str):
        module = "<unknown>"
    return name if module in ("__main__", "builtins") else module + "." + name


def one_line(e):
    """The error as one line: `Type: message`, the message's first non-empty line when it has several - the
    line that says what failed (torch.load's weights-only error ends with a pointer to its documentation,
    which is no error at all). A SyntaxError names its file and line."""
    if isinstance(e, SyntaxError):
        return "%s: %s" % (type(e).__name__, e)
    try:
        message = str(e)
    except Exception:  # as Python prints it
        message = "<exception str() failed>"
    lines = (_ANSI.sub("", line).strip() for line in message.splitlines())
    first = next((line for line in lines if line), "")
    if first:
        return "%s: %s" % (_type_name(type(e)), first)
    # Without a message (a bare `assert`, `raise ValueError`) the line it was raised at is what says what failed:
    # a language model's tune without its corpus had said only "AssertionError".
    return _type_name(type(e)) + _raised_at(e.__traceback__)


def _raised_at(tb):
    """` at file.py:LINE: code` of the innermost frame, or "" without a traceback."""
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    path, lineno = tb.tb_frame.f_code.co_filename, tb.tb_lineno
    text = linecache.getline(path, lineno).strip()
    return " at %s:%d" % (os.path.basename(path), lineno) + (": " + text if text else "")


def _argparse_message(tb):
    """The message argparse's exit() printed before it raised SystemExit (parser.error() builds it: `prog:
    error: ...`), read from its frame; None when argparse did not end the script."""
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code is _ARGPARSE_EXIT:
            message = frame.f_locals.get("message")
            return message if isinstance(message, str) and message.strip() else None
        tb = tb.tb_next
    return None


def _pick(text):
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return next((line for line in lines if ": error: " in line), lines[-1] if lines else "")


def exit_line(e, script):
    """The one line for a SystemExit with a failing code (None: it exits with 0)."""
    code = e.code
    if code is None or code == 0:
        return None
    message = _argparse_message(e.__traceback__)
    if message is not None:
        return _pick(message)
    if not isinstance(code, int):
        return _pick(str(code)) or "exit code 1"
    line = "exit code %d" % code
    tb = script_traceback(e.__traceback__, script)
    last = None
    while tb is not None:  # the script's own innermost frame: where it called sys.exit
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(script):
            last = tb
        tb = tb.tb_next
    if last is not None:
        path, lineno = last.tb_frame.f_code.co_filename, last.tb_lineno
        text = linecache.getline(path, lineno).strip()
        line += " at %s:%d" % (os.path.basename(path), lineno) + (": " + text if text else "")
    return line
