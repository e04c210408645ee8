"""The step message (protocol.step_line) is formatted by hand for speed: it must read back as the JSON that
json.dumps of the same fields writes, whatever the values, and a hook that fails reports once and stops."""

import json
import os
import re
import unittest

from tunebench import protocol
from tunebench.hooks.reporter import Reporter

FIELDS = dict(i=7, samples=64, wall_ns=12_345_678, data_wait_ns=0, minor_faults=3, config_rev=2, skipped=False,
              t_ns=9_876_543_210, forward_ns=100, backward_ns=200, optim_ns=300, optimizer_steps=1,
              update="optimizer", unit="samples", tokens=None, profiler_ns=0, compile_ns=0, loader_pass=0, loader_len=0, traced=False,
              evaluations=0, memory_json='{"peak": 1024, "held": 512}')


def expected(**f):
    return {"v": protocol.VERSION, "type": "step", "i": f["i"], "samples": f["samples"], "wall_ns": f["wall_ns"],
            "data_wait_ns": f["data_wait_ns"], "h2d_ns": 0, "minor_faults": f["minor_faults"], "loss": None,
            "config_rev": f["config_rev"], "warmup": False, "skipped": f["skipped"], "t_ns": f["t_ns"],
            "forward_ns": f["forward_ns"], "backward_ns": f["backward_ns"], "optim_ns": f["optim_ns"],
            "optimizer_steps": f["optimizer_steps"], "update": f["update"], "unit": f["unit"],
            "tokens": None if f["tokens"] is None else int(f["tokens"]), "profiler_ns": f["profiler_ns"],
            "compile_ns": f["compile_ns"], "loader_pass": f["loader_pass"], "loader_len": f["loader_len"],
            "traced": f["traced"], "evaluations": f["evaluations"],
            "memory": json.loads(f["memory_json"])}


class StepLine(unittest.TestCase):
    def test_reads_back_as_json_dumps_wrote_it(self):
        for change in ({}, {"skipped": True, "update": "none", "optimizer_steps": 0},
                       {"unit": "sequences", "tokens": 4096.0, "update": "hand-written"},
                       {"profiler_ns": 2_400_000_000, "memory_json": "{}", "traced": True},
                       {"compile_ns": 10_625_223_000}, {"loader_pass": 41, "loader_len": 5005},
                       {"evaluations": 20}):
            f = dict(FIELDS, **change)
            line = protocol.step_line(**f)
            self.assertTrue(line.endswith("\n") and line.count("\n") == 1, line)
            got = json.loads(line)
            self.assertEqual(got, expected(**f))
            self.assertEqual(list(got), list(expected(**f)))  # the keys in json.dumps's order

    def test_every_field_is_named(self):
        with self.assertRaises(TypeError):
            protocol.step_line(*FIELDS.values())  # positional: a swapped pair would go unseen
        with self.assertRaises(TypeError):
            protocol.step_line(**{k: v for k, v in FIELDS.items() if k != "t_ns"})


class HookReporter(unittest.TestCase):
    def test_a_failure_stops_reporting_and_is_told_once_per_failure(self):
        told = []
        r = Reporter()
        r.attach("run", "tracker", told.append)
        e = RuntimeError("inside a hook")
        r.fail(e)
        self.assertIsNone(r.tracker)
        self.assertEqual(r.run, "run")  # the run stays: a knob may still be set
        self.assertEqual(told, [e])
        r.detach()
        self.assertIsNone(r.run)


if __name__ == "__main__":
    unittest.main()


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(protocol.__file__))))


def _read(*path):
    with open(os.path.join(ROOT, *path)) as f:
        return f.read()


class MessagesDeclaredOnce(unittest.TestCase):
    """client/protocol.h, protocol.py and docs/protocol.md name the same messages; no product C++ writes one."""

    def header_lists(self):
        h = _read("client", "include", "client", "protocol.h")
        names = dict(re.findall(r'inline constexpr char (\w+)\[\] = "(\w+)";', h))
        self.assertTrue(names)
        for ident, text in names.items():
            self.assertEqual(ident, text, "msg::%s is spelled as its type" % ident)

        def listed(array):
            body = re.search(array + r"\[\] = \{([^}]*)\}", h).group(1)
            return [names[n] for n in re.findall(r"msg::(\w+)", body)]
        return listed("kToParent"), listed("kFromParent")

    def test_the_header_and_the_python_twin_agree(self):
        to_parent, from_parent = self.header_lists()
        self.assertEqual(sorted(to_parent), sorted(protocol.TO_PARENT))
        self.assertEqual(sorted(from_parent), sorted(protocol.FROM_PARENT))
        self.assertEqual(len(set(protocol.TO_PARENT)), len(protocol.TO_PARENT))

    def test_the_document_has_a_row_for_each(self):
        doc = _read("docs", "protocol.md")
        rows = set()
        for table in re.findall(r"\| type \| fields \|\n\|---\|---\|\n((?:\|.*\n)+)", doc):
            rows.update(re.findall(r"^\| `(\w+)` \|", table, re.M))
        self.assertEqual(rows, set(protocol.TO_PARENT) | set(protocol.FROM_PARENT))

    def test_no_product_cpp_spells_a_message_type(self):
        names = "|".join(set(protocol.TO_PARENT) | set(protocol.FROM_PARENT))
        literal = re.compile(r'"type",\s*"(%s)"|\btype [!=]= "(%s)"|"type"\][^;\n]*[!=]= "(%s)"|'
                             r'value\("type", std::string\(\)\) [!=]= "(%s)"' % ((names,) * 4))
        found = []
        for top in ("app", "client", "engine", "gate", "measure", "profiler", "ui", "knobs"):
            for d, _, files in os.walk(os.path.join(ROOT, top)):
                for name in files:
                    if name.endswith((".cpp", ".h")):
                        with open(os.path.join(d, name)) as f:
                            for n, line in enumerate(f, 1):
                                if literal.search(line):
                                    found.append("%s:%d" % (os.path.relpath(os.path.join(d, name), ROOT), n))
        self.assertEqual(found, [], "a message type written as a literal: use client/protocol.h's msg:: name")

    def test_a_channel_sends_no_undeclared_type(self):
        r, w = os.pipe()
        try:
            ch = protocol.Channel(w)
            with self.assertRaises(ValueError):
                ch.send("hullo", message="typo")
            ch.send("warning", message="declared")
            os.close(w)
            w = -1
            self.assertEqual(json.loads(os.read(r, 4096))["type"], "warning")
        finally:
            os.close(r)
            if w >= 0:
                os.close(w)
