"""The launcher's knobs against the knob table (tunebench/knobs.json): every row a script has is a class of
knobs.py with the row's fields, every row it lacks is refused with the row's reason. The C++ readers of the same
table: tests/engine/test_knob_table.cpp."""

import unittest

from tunebench import knobs
from tunebench.knob_errors import KnobError


class KnobTable(unittest.TestCase):
    def test_every_script_row_is_a_class_and_no_other(self):
        ids = [k.id for k in knobs.CATALOG]
        self.assertEqual(len(set(ids)), len(ids))
        self.assertEqual(set(ids), {i for i, r in knobs.ROWS.items() if "script" in r})
        self.assertEqual(set(knobs.ENGINE_ONLY), {i for i, r in knobs.ROWS.items() if "script" not in r})

    def test_each_class_is_its_row(self):
        for k in knobs.CATALOG:
            f = knobs.script_fields(knobs.ROWS[k.id])
            with self.subTest(knob=k.id):
                self.assertEqual((k.type, k.title, k.description, k.recommended, k.snippet),
                                 (f["type"], f["title"], f["description"], f["recommended"], f.get("snippet", "")))
                self.assertEqual((k.numerics, k.process_scope), (f.get("numerics", False), f.get("process_scope", False)))
                if f["default"] is not None:
                    self.assertEqual(k.default, f["default"])
                if k.type == "int":
                    self.assertEqual((k.lo, k.hi), (f["min"], f["max"]))
                    self.assertEqual(k.normalize(str(f["max"])), str(f["max"]))
                    self.assertRaises(KnobError, k.normalize, str(f["max"] + 1))
                elif k.type == "enum":
                    self.assertEqual(list(k.choices), f["choices"])

    def test_a_knob_a_script_lacks_is_refused_with_the_rows_reason(self):
        for kid, why in knobs.ENGINE_ONLY.items():
            with self.subTest(knob=kid):
                self.assertTrue(why)
                with self.assertRaises(KnobError) as e:
                    knobs.lookup(kid)
                self.assertIn(why, str(e.exception))

    def test_a_running_script_keeps_its_cudnn_benchmark(self):
        # PyTorch answers a convolution from the algorithm it cached for its shapes, its heuristics' or the
        # benchmark's, whatever the flag says: a live change either way would be measured as doing nothing.
        import torch
        k = knobs.BY_ID["cudnn_benchmark"]
        was = torch.backends.cudnn.benchmark
        try:
            for start, to in (("off", "on"), ("on", "off")):
                torch.backends.cudnn.benchmark = start == "on"
                with self.assertRaises(KnobError) as e:
                    k.apply(None, to, live=True)
                self.assertIn("cudnn_benchmark=%s in a running script changes nothing" % to, str(e.exception))
                self.assertEqual(torch.backends.cudnn.benchmark, start == "on")
                k.apply(None, start, live=True)  # the value it has: nothing to refuse
                k.apply(None, to, live=False)  # at the script's start
                self.assertEqual(torch.backends.cudnn.benchmark, to == "on")
        finally:
            torch.backends.cudnn.benchmark = was

    def test_a_class_without_a_row_is_refused_at_once(self):
        with self.assertRaises(TypeError):
            type("Mistyped", (knobs.Knob,), {"id": "worker"})


if __name__ == "__main__":
    unittest.main()
