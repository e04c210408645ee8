"""scripts/check-test-times.py on runs made up here: a CTest folder of three tests (one labelled e2e) and the
JUnit files a run of them could leave. What it must say: within the limits, over them, and a slow host told
apart from a test that grew, by the stored reference run."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "check-test-times.py")


def junit(times):
    cases = "".join('<testcase name="%s" classname="%s" time="%.1f" status="run"/>' % (n, n, s)
                    for n, s in times.items())
    return '<?xml version="1.0"?><testsuite tests="%d">%s</testsuite>' % (len(times), cases)


class CheckTestTimes(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        d = self.dir.name
        # Twelve logic tests of 10 s and one end-to-end test of 60 s in the reference run, its phase 100 s.
        self.names = ["logic.%d" % i for i in range(12)]
        with open(os.path.join(d, "CTestTestfile.cmake"), "w") as f:
            for n in self.names + ["e2e.whole"]:
                f.write("add_test(%s /bin/true)\n" % n)
            f.write('set_tests_properties(e2e.whole PROPERTIES LABELS "e2e")\n')
            f.write('set_tests_properties(%s PROPERTIES LABELS "logic")\n' % " ".join(self.names))
        self.reference = os.path.join(d, "reference.json")
        self.check({n: 10.0 for n in self.names} | {"e2e.whole": 60.0}, 100, "--write-reference", self.reference,
                   "--note", "made here")

    def check(self, times, phase, *args):
        path = os.path.join(self.dir.name, "junit.xml")
        with open(path, "w") as f:
            f.write(junit(times))
        return subprocess.run([sys.executable, SCRIPT, self.dir.name, path, "--phase-seconds", str(phase),
                               "--logic", "12", "--e2e", "70", "--phase", "110", *args],
                              capture_output=True, text=True, timeout=60)

    def run_of(self, factor, grown=None, grown_to=0.0, phase=100):
        times = {n: 10.0 * factor for n in self.names} | {"e2e.whole": 60.0 * factor}
        if grown:
            times[grown] = grown_to
        return self.check(times, phase * factor, "--reference", self.reference)

    def test_the_reference_holds_the_tests_and_the_phase(self):
        with open(self.reference) as f:
            ref = json.load(f)
        self.assertEqual(ref["phase_s"], 100)
        self.assertEqual(ref["note"], "made here")
        self.assertEqual(ref["tests"]["e2e.whole"], 60.0)
        self.assertEqual(len(ref["tests"]), 13)

    def test_within_the_limits_passes(self):
        r = self.run_of(1.0)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("the tests took 1.00x their reference times (median of 13)", r.stdout)

    def test_a_slower_host_alone_passes(self):
        # Every test 1.25x slower: over the absolute limits (12.5 > 12, 75 > 70, 125 > 110), not over the
        # reference at that speed.
        r = self.run_of(1.25)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("1.25x their reference times", r.stdout)
        # One of them 12% slower again (14 s): within the 30% a test may vary around its reference.
        r = self.run_of(1.25, "logic.3", 14.0)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_without_the_reference_the_same_run_is_over_time(self):
        times = {n: 12.5 for n in self.names} | {"e2e.whole": 75.0}
        r = self.check(times, 125)
        self.assertEqual(r.returncode, 1)
        self.assertIn("over time: logic.0 (logic) took 12.5 s, more than its 12 s", r.stderr)
        self.assertIn("over time: e2e.whole (e2e) took 75.0 s, more than its 70 s", r.stderr)
        self.assertIn("over time: the test phase took 125 s, more than its 110 s", r.stderr)

    def test_a_test_that_grew_fails_on_a_slow_host(self):
        r = self.run_of(1.25, "logic.3", 20.0)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("logic.3 (logic) took 20.0 s, more than its 12 s and 30% more than its reference 10.0 s",
                      r.stderr)
        self.assertEqual(r.stderr.count("over time"), 1, r.stderr)

    def test_a_phase_that_grew_fails_on_a_slow_host(self):
        r = self.run_of(1.25, phase=100 * 1.2)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("the test phase took 150 s, more than its 110 s and 15% more than the reference's 100 s",
                      r.stderr)

    def test_a_host_far_slower_than_the_reference_is_not_excused(self):
        # Everything 1.8x: the speed counted is at most 1.3x, and 1.8 is more than 30% over 1.3: every test and
        # the phase are over.
        r = self.run_of(1.8)
        self.assertEqual(r.returncode, 1)
        self.assertIn("1.30x their reference times", r.stdout)
        self.assertEqual(r.stderr.count("over time"), 14, r.stderr)

    def test_an_unreadable_reference_is_one_line_and_exit_two(self):
        with open(self.reference, "w") as f:
            f.write("{")
        r = self.run_of(1.0)
        self.assertEqual(r.returncode, 2)
        self.assertTrue(r.stderr.startswith("check-test-times: error: "), r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
