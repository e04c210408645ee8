"""A script's failure as Python itself would show it: the traceback from the script's first frame on (runpy's
and the launcher's frames left out), and the one line a parent shows."""

import os
import traceback


def script_traceback(tb, script):
    """The traceback from the script's first frame on: what `python script.py` prints (runpy's and our frames
    dropped). None when the error is not inside the script's code (a SyntaxError: Python prints no frames)."""
    script = os.path.abspath(script)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != script:
        tb = tb.tb_next
    return tb


def one_line(e):
    """The error as one line: `Type: message` (a SyntaxError names its file and line)."""
    if isinstance(e, SyntaxError):
        return "%s: %s" % (type(e).__name__, e)
    last = "".join(traceback.format_exception_only(type(e), e)).strip().splitlines()
    return last[-1] if last else type(e).__name__
