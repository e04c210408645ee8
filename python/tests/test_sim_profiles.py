"""The built-in simulation profile of a script (engine/profiles/h100-imagenet-script.json) lists the launcher's
knobs as the tuner sees them on a real script: every one of the knob table's script rows (python/tunebench/
knobs.json, which knobs.py reads), taken from the table, so that the simulated tune tries what a real one can."""

import json
import os
import unittest

from tunebench import knobs

PROFILE = os.path.join(os.path.dirname(__file__), "..", "..", "engine", "profiles", "h100-imagenet-script.json")


class ScriptProfileKnobs(unittest.TestCase):
    def setUp(self):
        with open(PROFILE) as f:
            self.world = json.load(f)
        # The machine is the profile it extends (its top-level fields; the engine reads it the same way).
        base = self.world.get("extends")
        if base:
            with open(os.path.join(os.path.dirname(PROFILE), base)) as f:
                for key, value in json.load(f).items():
                    self.world.setdefault(key, value)
        self.own = {k["id"]: k for k in self.world["knobs"] if not k.get("engine")}

    def test_every_launcher_knob_is_in_the_profile_and_no_other(self):
        self.assertEqual(set(self.own), set(knobs.BY_ID))

    def test_each_knob_is_the_tables_at_this_machines_defaults(self):
        for kid, k in self.own.items():
            with self.subTest(knob=kid):
                self.assertTrue(k.get("script"), k)  # the table's row, not a copy of its fields
                self.assertLessEqual(set(k), {"id", "script", "default"})
                # A default of its own only where the launcher reads the machine's at start (threads: its cores).
                if knobs.script_fields(knobs.ROWS[kid])["default"] is None:
                    self.assertIn("default", k)
                if kid == "intra_op_threads":
                    self.assertEqual(k["default"], str(self.world.get("cores", 8)))

    def test_the_engine_only_knobs_are_not_the_scripts(self):
        # What knobs.py refuses for a script (a code change) is the job's own setting here, never a knob.
        for k in self.world["knobs"]:
            self.assertNotIn(k["id"], set(knobs.ENGINE_ONLY) - {"cpu_allocator"})
        for kid in self.world.get("job", {}):
            if kid != "source":
                self.assertIn(kid, knobs.ENGINE_ONLY)


if __name__ == "__main__":
    unittest.main()
