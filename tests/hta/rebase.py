"""A copy of a Kineto trace whose timestamps a double holds exactly, for HTA.

HTA parses times with Python's json (floats). A PyTorch 2.x trace writes nanosecond timestamps as
microseconds since the epoch with three decimals (1712195495505582.988): at that size a double holds steps of
0.25 us, so HTA would read that kernel as starting at ...583.0, and every gap and edge moves by up to a
quarter microsecond. HTA aligns every rank to its first event after parsing; this does the same subtraction
before parsing, on the decimal text, so nothing is rounded. Durations and all other fields are untouched."""
import gzip
import re

# "ts": <number> as Kineto writes it; the lookbehind skips an escaped \"ts\" inside a string.
_TS = re.compile(rb'(?<!\\)("ts"\s*:\s*)(\d+)(\.\d+)?')


def needs_rebase(path):
    """Fractional timestamps of 2**43 us or more (a double's step there is over a nanosecond), judged on the
    file's first MiB."""
    return any(m.group(3) and int(m.group(2)) >= 1 << 43 for m in _TS.finditer(read(path, 1 << 20)))


def read(path, limit=-1):
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
        return f.read(limit)


def rebase(text):
    """(new text, base in whole microseconds): every "ts" minus the smallest one's integer part."""
    base = min(int(m.group(2)) for m in _TS.finditer(text))

    def sub(m):
        return m.group(1) + str(int(m.group(2)) - base).encode() + (m.group(3) or b"")

    return _TS.sub(sub, text), base
