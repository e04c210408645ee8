"""The knob table (knobs.json beside this file): every knob one row. The binaries carry the same file compiled in
(knobs/include/knobs/table.h says what each field means). No torch: the hooks and knobs.py read it."""

import json
import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "knobs.json")) as _f:
    ROWS = {_r["id"]: _r for _r in json.load(_f)["knobs"]}


def script_fields(row):
    """A row as a script's knob: its common fields with the "script" object's over them."""
    out = {k: v for k, v in row.items() if k not in ("engine", "script")}
    out.update(row.get("script") or {})
    return out


def dataloader_args():
    """Knob id -> (the DataLoader's keyword, the value as that argument takes it) for the knobs that are one."""
    def convert(row):
        return int if script_fields(row)["type"] == "int" else (lambda v: v == "on")
    return {i: (r["dataloader_arg"], convert(r)) for i, r in ROWS.items() if r.get("dataloader_arg")}
