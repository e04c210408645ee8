#!/usr/bin/env python3
"""Holds a test run to the suite's times (docs/design.md, "Tests"): prints the ten slowest tests and fails when
a logic test took more than --logic seconds, an end-to-end test (CTest label "e2e") more than --e2e, there are
more than --max-e2e end-to-end tests, or the test phase took more than --phase seconds.

The limits are a usual day's on the 2-core VM, times --scale. The same VM has slow days (1.7x: the phase took
498-519 s on one, 806-949 s on others), and a time is then judged against the run stored by --reference too:
the tests' median time against their reference times says how fast this host is now (at most 1.3x slower is
excused), and a test or the phase is over time only when it is over its absolute limit and also over its
reference at that speed by more than --growth / --phase-growth. A test without a reference is held to its
absolute limit alone.

usage: check-test-times.py BUILD_DIR JUNIT_XML [--phase-seconds S] [--scale F] [--logic 30] [--e2e 90]
                           [--max-e2e 8] [--phase 720] [--reference R.json] [--growth 0.3] [--phase-growth 0.15]
       check-test-times.py BUILD_DIR JUNIT_XML --phase-seconds S --write-reference R.json --note TEXT
  BUILD_DIR        where CTest ran (its tests' labels are read with `ctest --show-only=json-v1`)
  JUNIT_XML        what `ctest --output-junit` wrote (each test's seconds)
  --phase-seconds  the test phase's wall time, measured by the caller
  --scale          multiplies every absolute limit: scripts/test-under-load.sh runs beside two CPU burners (2)
  --reference      a run's times (tests/times-reference.json), written by --write-reference from a green run;
                   --growth / --phase-growth: how much more than its reference a test / the phase may take (0.3 / 0.15)
Exit 0 within the times, 1 beyond them (one line per breach), 2 on unreadable input.
"""

import argparse
import json
import statistics
import subprocess
import sys
import xml.etree.ElementTree as ET

# Tests shorter than this are mostly CTest's own start-up: their ratios say nothing about the host.
MIN_REFERENCE_S = 1.0
# The most a host may be slower than the reference's and excused: the reference was itself made on a slow day,
# and a change that slows every test alike reads as a slower host (1.5x would be, and is not excused).
MAX_SPEED = 1.3


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


def host_speed(ran, reference):
    """The median of this run's time over the reference's, over the tests both ran for a second or more, at most
    MAX_SPEED (None below ten such tests), and how many there were."""
    ratios = [s / reference[n] for n, s in ran
              if reference.get(n, 0) >= MIN_REFERENCE_S and s >= MIN_REFERENCE_S]
    return (min(MAX_SPEED, statistics.median(ratios)) if len(ratios) >= 10 else None), len(ratios)


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
    p.add_argument("--reference")
    p.add_argument("--growth", type=float, default=0.3)
    p.add_argument("--phase-growth", type=float, default=0.15)
    p.add_argument("--write-reference")
    p.add_argument("--note", default="")
    a = p.parse_args()
    try:
        labels = labels_by_test(a.build_dir)
        times = times_of(a.junit)
        reference, reference_phase = {}, None
        if a.reference:
            with open(a.reference) as f:
                ref_doc = json.load(f)
            reference = {n: float(s) for n, s in ref_doc["tests"].items()}
            reference_phase = float(ref_doc["phase_s"])
    except (OSError, ET.ParseError, RuntimeError, ValueError, KeyError, TypeError, AttributeError,
            subprocess.TimeoutExpired) as e:
        print("check-test-times: error: %s" % e, file=sys.stderr)
        return 2

    def kind(name):
        return "e2e" if "e2e" in labels.get(name, []) else "logic"

    ran = [(n, s) for n, s, status in times if status not in ("notrun", "disabled", "skipped")]
    if a.write_reference:
        if a.phase_seconds is None:
            print("check-test-times: error: --write-reference needs --phase-seconds", file=sys.stderr)
            return 2
        doc = {"note": a.note, "phase_s": round(a.phase_seconds),
               "tests": {n: round(s, 1) for n, s in sorted(ran) if s >= MIN_REFERENCE_S}}
        with open(a.write_reference, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        print("check-test-times: wrote %d tests' times and the phase's %.0f s to %s"
              % (len(doc["tests"]), a.phase_seconds, a.write_reference))
        return 0

    print("the ten slowest tests:")
    for n, s in sorted(ran, key=lambda x: -x[1])[:10]:
        print("  %7.1f s  %-5s  %s" % (s, kind(n), n))
    speed, compared = host_speed(ran, reference) if reference else (None, 0)
    if speed is not None:
        print("host: the tests took %.2fx their reference times (median of %d); a time over its limit is over time "
              "only when it is also more than %.0f%% over its reference at that speed (the phase: %.0f%%)"
              % (speed, compared, 100 * a.growth, 100 * a.phase_growth))
    elif reference:
        print("host: too few tests to compare with the reference (%d): the absolute limits alone" % compared)

    def over_reference(seconds, ref, growth):
        return speed is None or ref is None or seconds > (1 + growth) * ref * speed

    breaches = []
    e2e = sorted(n for n in labels if "e2e" in labels[n])
    if len(e2e) > a.max_e2e:
        breaches.append("%d end-to-end tests, more than %d: %s" % (len(e2e), a.max_e2e, ", ".join(e2e)))
    for n, s in ran:
        limit = (a.e2e if kind(n) == "e2e" else a.logic) * a.scale
        if s > limit and over_reference(s, reference.get(n), a.growth):
            why = "" if speed is None or n not in reference else \
                " and %.0f%% more than its reference %.1f s at this host's speed" % (100 * a.growth, reference[n])
            breaches.append("%s (%s) took %.1f s, more than its %.0f s%s" % (n, kind(n), s, limit, why))
    if a.phase_seconds is not None:
        print("test phase: %.0f s wall, %.0f s of tests summed" % (a.phase_seconds, sum(s for _, s in ran)))
        limit = a.phase * a.scale
        if a.phase_seconds > limit and over_reference(a.phase_seconds, reference_phase, a.phase_growth):
            why = "" if speed is None else " and %.0f%% more than the reference's %.0f s at this host's speed" % (
                100 * a.phase_growth, reference_phase)
            breaches.append("the test phase took %.0f s, more than its %.0f s%s" % (a.phase_seconds, limit, why))
    for b in breaches:
        print("check-test-times: over time: " + b, file=sys.stderr)
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
