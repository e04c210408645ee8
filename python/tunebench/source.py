"""Where in the user's files a DataLoader or an optimizer was made: the line a tuning report tells them to
edit (file, line, the source text)."""

import linecache
import os
import traceback

_OURS = os.path.dirname(os.path.abspath(__file__))


def caller_site():
    """The first stack frame outside torch and tunebench: (file, line, code)."""
    for frame in reversed(traceback.extract_stack()[:-1]):
        path = os.path.abspath(frame.filename)
        if path.startswith(_OURS) or os.sep + "torch" + os.sep in path or path.startswith("<"):
            continue
        code = (linecache.getline(frame.filename, frame.lineno) or "").strip()
        return {"file": frame.filename, "line": frame.lineno, "code": code}
    return {"file": "?", "line": 0, "code": ""}
