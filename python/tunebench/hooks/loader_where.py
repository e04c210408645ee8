"""Where a loader part's code is, for the line a user would change: "path:line".

A part the script defines itself (a transform class, the dataset's `__getitem__`, a collate function) is found
where it is defined. A library's (a torchvision transform, PIL's open and decode, torch's default collate) is
found where the script uses it: the first line of the script that names it ("RandomResizedCrop(", "Image.open(",
"DataLoader("). Worked out once per part and process (hooks/loader_parts.py asks when a part is first timed),
never per sample; "" when it cannot be told.
"""

import inspect
import os

# Modules that are libraries, not the user's code: a part defined in one is looked up in the script instead.
_LIBRARIES = ("torch", "torchvision", "PIL", "numpy", "tunebench")
_script = None     # the user's script (the launcher sets it); None: no lookup in the script
_lines = None      # its lines, read once

# What names a library part in a script, in the order to look for them.
_NAMED_BY = {
    "open (PIL)": ("Image.open(", "ImageFolder(", "DatasetFolder("),
    "read + decode (PIL)": (".convert(", "Image.open(", "ImageFolder(", "DatasetFolder("),
    "collate": ("collate_fn", "DataLoader("),
}


def set_script(path):
    global _script, _lines
    _script, _lines = (os.path.abspath(path) if path else None), None


def _library(path):
    if not path:
        return True
    if os.sep + "site-packages" + os.sep in path or os.sep + "dist-packages" + os.sep in path:
        return True
    std = os.path.dirname(os.__file__)
    return os.path.abspath(path).startswith(std + os.sep)


def _defined_at(obj):
    """'path:line' where obj (a function, a class, an instance's class, a generator) is defined, when that is the
    user's code; else None."""
    target = obj
    if inspect.isgenerator(obj):
        code = obj.gi_code
        return None if _library(code.co_filename) else "%s:%d" % (code.co_filename, code.co_firstlineno)
    if inspect.ismethod(target):
        target = target.__func__
    if not (inspect.isfunction(target) or inspect.isclass(target)):
        target = type(target)
    module = getattr(target, "__module__", "") or ""
    if module.split(".")[0] in _LIBRARIES:
        return None
    try:
        path = inspect.getsourcefile(target)
        _, first = inspect.getsourcelines(target)
    except (TypeError, OSError):
        return None
    if _library(path):
        return None
    return "%s:%d" % (path, first)


def _in_script(needles):
    global _lines
    if _script is None:
        return ""
    if _lines is None:
        try:
            with open(_script, encoding="utf-8", errors="replace") as f:
                _lines = f.read().splitlines()
        except OSError:
            _lines = []
    for needle in needles:
        for i, line in enumerate(_lines):
            code = line.split("#", 1)[0]
            if needle in code:
                return "%s:%d" % (_script, i + 1)
    return ""


def where(name, obj=None):
    """'path:line' of part `name` (run by `obj` when known), or ""."""
    try:
        if obj is not None:
            at = _defined_at(obj)
            if at:
                return at
        return _in_script(_NAMED_BY.get(name, (name + "(",)))
    except Exception:  # noqa: BLE001 - ours: a part without its line, never a failed sample
        return ""


def script():
    """The script parts are looked up in (a spawned worker is given it: its module state starts empty)."""
    return _script
