"""A script run with some of its files replaced by patched copies (launch.py --source FILE COPY).

The tuner checks a patch it wrote by running the patched script plainly against the original. The copy runs
*as* the original: at its path, so the script's directory, `__file__`, relative imports, data found next to
it and the names pickles record stay the original's, and nothing is written into the user's tree. The main
script's copy is read where runpy reads the script (io.open_code); an imported module's copy by a loader
that reads the copy for the original's path and never uses (or writes) the original's bytecode cache.
"""

import importlib.abc
import importlib.machinery
import io
import os
import sys

_copies = {}  # realpath of an original file -> the patched copy that runs in its place
_real_open_code = io.open_code


def _copy_of(path):
    try:
        return _copies.get(os.path.realpath(path))
    except (TypeError, ValueError):
        return None


def _open_code(path):
    copy = _copy_of(path)
    return _real_open_code(copy if copy else path)


class _Loader(importlib.machinery.SourceFileLoader):
    def get_data(self, path):
        copy = _copy_of(path)
        return super().get_data(copy if copy else path)

    def path_stats(self, path):
        if _copy_of(path):  # no cached bytecode of the original, and none written for the copy's text
            raise OSError("a patched copy runs in place of " + path)
        return super().path_stats(path)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or not spec.origin or not _copy_of(spec.origin):
            return None  # the usual finders take it
        spec.loader = _Loader(name, spec.origin)
        return spec


def install(pairs):
    """pairs: (original, copy) paths. A missing copy is an error now, not a silent run of the original."""
    for original, copy in pairs or ():
        if not os.path.isfile(copy):
            raise FileNotFoundError("the patched copy of %s is missing: %s" % (original, copy))
        _copies[os.path.realpath(original)] = os.path.abspath(copy)
    if not _copies:
        return
    io.open_code = _open_code
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
