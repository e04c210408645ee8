"""The step message (protocol.step_line) is formatted by hand for speed: it must read back as the JSON that
json.dumps of the same fields writes, whatever the values, and a hook that fails reports once and stops."""

import json
import unittest

from tunebench import protocol
from tunebench.hooks.reporter import Reporter

FIELDS = dict(i=7, samples=64, wall_ns=12_345_678, data_wait_ns=0, minor_faults=3, config_rev=2, skipped=False,
              t_ns=9_876_543_210, forward_ns=100, backward_ns=200, optim_ns=300, optimizer_steps=1,
              update="optimizer", unit="samples", tokens=None, profiler_ns=0, traced=False,
              memory_json='{"peak": 1024, "held": 512}')


def expected(**f):
    return {"v": protocol.VERSION, "type": "step", "i": f["i"], "samples": f["samples"], "wall_ns": f["wall_ns"],
            "data_wait_ns": f["data_wait_ns"], "h2d_ns": 0, "minor_faults": f["minor_faults"], "loss": None,
            "config_rev": f["config_rev"], "warmup": False, "skipped": f["skipped"], "t_ns": f["t_ns"],
            "forward_ns": f["forward_ns"], "backward_ns": f["backward_ns"], "optim_ns": f["optim_ns"],
            "optimizer_steps": f["optimizer_steps"], "update": f["update"], "unit": f["unit"],
            "tokens": None if f["tokens"] is None else int(f["tokens"]), "profiler_ns": f["profiler_ns"],
            "traced": f["traced"], "memory": json.loads(f["memory_json"])}


class StepLine(unittest.TestCase):
    def test_reads_back_as_json_dumps_wrote_it(self):
        for change in ({}, {"skipped": True, "update": "none", "optimizer_steps": 0},
                       {"unit": "sequences", "tokens": 4096.0, "update": "hand-written"},
                       {"profiler_ns": 2_400_000_000, "memory_json": "{}", "traced": True}):
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
