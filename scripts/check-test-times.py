#!/usr/bin/env python3
"""Holds a test run to the suite's times (docs/design.md, "Tests"): prints the ten slowest tests and fails when
a logic test took more than --logic seconds, an end-to-end test (CTest label "e2e") more than --e2e, there are
more than --max-e2e end-to-end tests, or the test phase took more than --phase seconds.

usage: check-test-times.py BUILD_DIR JUNIT_XML [--phase-seconds S] [--scale F] [--logic 30] [--e2e 90]
                           [--max-e2e 8] [--phase 720]
  BUILD_DIR        where CTest ran (its tests' labels are read with `ctest --show-only=json-v1`)
  JUNIT_XML        what `ctest --output-junit` wrote (each test's seconds)
  --phase-seconds  the test phase's wall time, measured by the caller
  --scale          multiplies every limit: scripts/test-under-load.sh runs beside two CPU burners (2)
Exit 0 within the times, 1 beyond them (one line per breach), 2 on unreadable input.
"""

import argparse
import json
import subprocess
import sys
import xml.etree.ElementTree as ET


def labels_by_test(build_dir):
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build_dir, capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        raise RuntimeError("ctest --show-only failed in %s: %s" % (build_dir, out.stderr.strip()))
    labels = {}
    for t in json.loads(out.stdout)["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        labels[t["name"]] = props.get("LABELS", [])
    return labels


def times_of(junit):
    root = ET.parse(junit).getroot()
    cases = root.iter("testcase")
    return [(c.get("name"), float(c.get("time") or 0), c.get("status", "run")) for c in cases]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build_dir")
    p.add_argument("junit")
    p.add_argument("--phase-seconds", type=float)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--logic", type=float, default=30.0)
    p.add_argument("--e2e", type=float, default=90.0)
    p.add_argument("--max-e2e", type=int, default=8)
    p.add_argument("--phase", type=float, default=720.0)
    a = p.parse_args()
    try:
        labels = labels_by_test(a.build_dir)
        times = times_of(a.junit)
    except (OSError, ET.ParseError, RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
        print("check-test-times: error: %s" % e, file=sys.stderr)
        return 2

    def kind(name):
        return "e2e" if "e2e" in labels.get(name, []) else "logic"

    ran = [(n, s) for n, s, status in times if status not in ("notrun", "disabled", "skipped")]
    print("the ten slowest tests:")
    for n, s in sorted(ran, key=lambda x: -x[1])[:10]:
        print("  %7.1f s  %-5s  %s" % (s, kind(n), n))
    breaches = []
    e2e = sorted(n for n in labels if "e2e" in labels[n])
    if len(e2e) > a.max_e2e:
        breaches.append("%d end-to-end tests, more than %d: %s" % (len(e2e), a.max_e2e, ", ".join(e2e)))
    for n, s in ran:
        limit = (a.e2e if kind(n) == "e2e" else a.logic) * a.scale
        if s > limit:
            breaches.append("%s (%s) took %.1f s, more than its %.0f s" % (n, kind(n), s, limit))
    if a.phase_seconds is not None:
        print("test phase: %.0f s wall, %.0f s of tests summed" % (a.phase_seconds, sum(s for _, s in ran)))
        if a.phase_seconds > a.phase * a.scale:
            breaches.append("the test phase took %.0f s, more than its %.0f s" % (a.phase_seconds, a.phase * a.scale))
    for b in breaches:
        print("check-test-times: over time: " + b, file=sys.stderr)
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
