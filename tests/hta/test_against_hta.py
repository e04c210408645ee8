#!/usr/bin/env python3
"""`tunebench-cli analyze` checked against HolisticTraceAnalysis (HTA), Meta's trace analysis library.

usage: test_against_hta.py TUNEBENCH_CLI [--hta-defaults]
Exits 77 (CTest: skipped) when `hta` cannot be imported. --hta-defaults also prints what HTA answers with
its default options (the last step dropped, nanoseconds rounded to whole microseconds), for the docs.

Every trace in tests/testdata and one recorded now with torch.profiler (record_cpu_trace.py) goes through
both tools, on the same events (hta_figures.py says how HTA is run). Where both define a figure the same way
they must agree to the nanosecond. Where the definitions differ, the test checks the relation between the
two figures, with the difference computed from the rows HTA parsed (hta_rows.py); docs/analysis.md
("Against HTA") lists each difference, its size on each trace and why ours is the one kept:

- window: HTA spans its first to last GPU row; ours runs from the first step's start to the end of the last
  step's GPU work, so ours = HTA's + our lead-in + our tail - the reach of HTA's extra rows (below).
- HTA's temporal breakdown, overlap and kernel breakdown take every row with a stream as GPU time, the
  cuda_sync records ("Stream Sync", "Context Sync", "Stream Wait Event") too; ours counts kernels, memcpy
  and memset only. HTA's busy = ours + the time only those records cover; its compute = ours + the time
  only the records it types as compute ("Stream Wait Event") cover.
- idle causes: HTA splits each stream's gaps into host_wait (the next launch call started after the
  previous work ended), kernel_wait (shorter than a threshold, here our min gap) and other. On a device
  with one stream its gaps are the device's and map exactly: our queued classes (event wait + other) = HTA's
  other - the gaps whose next launch call had started but not returned (ours: the host was late). With
  several streams HTA's gaps are per stream (a stream waiting while another keeps the GPU busy is idle to
  HTA) and no sum of them is the device's idle: nothing is compared there.
- a trace without GPU work: HTA's temporal breakdown raises (it indexes the first kernel) and its kernel
  breakdown is empty; agreement is both saying there is no GPU time, the same steps, and the same host op
  counts and totals.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.normpath(os.path.join(HERE, "..", "testdata"))
sys.path.insert(0, HERE)

try:
    import hta  # noqa: F401
except ImportError as e:
    print(f"skipped: {sys.executable} cannot import hta ({e})")
    sys.exit(77)

import hta_figures  # noqa: E402
import hta_rows  # noqa: E402
import intervals as iv  # noqa: E402

# Tolerances. Both tools hold the times to the nanosecond (HTA reads a rebased copy, rebase.py); our JSON
# prints microseconds with three decimals and HTA sums doubles: one nanosecond, plus 1e-9 of the value for
# the float sums. HTA itself rounds its idle breakdown to 0.01 us per (stream, category) and its overlap to
# 0.01 %: half of those on top where they are compared.
NS = 0.001
IDLE_ROUNDING = 0.005
OVERLAP_ROUNDING = 0.00005

CLI = None
TOP = 10  # ours lists the top 10 kernels by total time (AnalysisOptions::top_kernels)


def close(a, b, tol=NS):
    return abs(a - b) <= tol + 1e-9 * max(abs(a), abs(b))


class Case:
    """One trace through both tools."""

    def __init__(self, path, tmp):
        self.name = os.path.basename(path).split(".")[0]
        out = os.path.join(tmp, self.name + ".analysis.json")
        subprocess.run([CLI, "analyze", path, "--json", out], check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            self.ours = json.load(f)
        a, base = hta_figures.load(path)
        self.hta = hta_figures.figures(a, self.ours["launch_gap"]["min_gap_us"])
        self.rows = hta_rows.Rows(a, base)

    @property
    def gpu(self):
        return self.ours["gpu"]["present"]


class AgainstHta(unittest.TestCase):
    cases = []
    recorded_error = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="tb-hta-test-")
        paths = sorted(glob.glob(os.path.join(TESTDATA, "*.json.gz")))
        recorded = os.path.join(cls.tmp.name, "recorded_cpu_torch.json")
        p = subprocess.run([sys.executable, os.path.join(HERE, "record_cpu_trace.py"), recorded],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode == 0:
            paths.append(recorded)
        else:
            cls.recorded_error = p.stdout[-2000:]
        cls.cases = [Case(p, cls.tmp.name) for p in paths]

    @classmethod
    def tearDownClass(cls):
        print_table(cls.cases)
        cls.tmp.cleanup()

    def test_a_trace_was_recorded_now(self):
        self.assertIsNone(self.recorded_error, "torch.profiler recording failed")
        self.assertTrue(any(c.name == "recorded_cpu_torch" for c in self.cases))

    def test_gpu_busy_and_idle(self):
        for c in self.cases:
            with self.subTest(trace=c.name):
                o, h, r = c.ours, c.hta, c.rows
                if not c.gpu:
                    self.assertEqual(o["gpu"]["busy_us"], 0)
                    self.assertFalse(r.has_gpu(), "HTA holds GPU rows ours does not see")
                    self.assertIsNone(h["temporal"])
                    continue
                t = h["temporal"]
                lead, tail = o["idle"]["lead_in_us"], o["idle"]["tail_us"]
                self.assertTrue(close(t["span"], o["window"]["duration_us"] - lead - tail + r.edge_extension()),
                                (t["span"], o["window"]["duration_us"], lead, tail, r.edge_extension()))
                self.assertTrue(close(t["span"] - t["idle"], o["gpu"]["busy_us"] + r.extra_busy()),
                                (t["span"] - t["idle"], o["gpu"]["busy_us"], r.extra_busy()))
                self.assertTrue(close(t["idle"], o["gpu"]["idle_us"] - lead - tail + r.edge_extension() - r.extra_busy()))
                self.assertTrue(close(t["compute"], o["gpu"]["compute_us"] + r.extra_compute()),
                                (t["compute"], o["gpu"]["compute_us"], r.extra_compute()))

    def test_idle_causes(self):
        for c in self.cases:
            if not c.gpu:
                continue
            with self.subTest(trace=c.name):
                o, per_stream = c.ours["idle"], c.hta["idle_per_stream"]
                if len(per_stream) != 1:
                    continue  # per-stream gaps: no sum of them is the device's idle (docstring)
                (stream, h), = per_stream.items()
                hw, kw, other = (h.get(k, 0.0) for k in ("host_wait", "kernel_wait", "other"))
                rounding = 3 * IDLE_ROUNDING
                in_flight = c.rows.launch_in_flight(stream, c.ours["launch_gap"]["min_gap_us"])
                self.assertTrue(close(hw + kw + other, c.ours["gpu"]["idle_us"] - o["lead_in_us"] - o["tail_us"], NS + rounding))
                self.assertTrue(close(o["event_wait_us"] + o["other_us"], other - in_flight, NS + IDLE_ROUNDING),
                                (o["event_wait_us"], o["other_us"], other, in_flight))
                host = sum(o[k] for k in ("loader_stall_us", "sync_us", "runtime_us", "launch_gap_us", "launch_overhead_us"))
                self.assertTrue(close(host, hw + kw + in_flight, NS + 2 * IDLE_ROUNDING), (host, hw, kw, in_flight))

    def test_comm_comp_overlap(self):
        for c in self.cases:
            with self.subTest(trace=c.name):
                ours, h = c.ours["communication"], c.hta["overlap"]
                if not ours["total_us"]:
                    self.assertIsNone(ours["overlap"])
                    self.assertIsNone(h, "HTA sees communication ours does not")
                    continue
                expected = ours["overlap"] + c.rows.extra_compute_over("COMMUNICATION") / ours["total_us"]
                self.assertTrue(close(h, expected, OVERLAP_ROUNDING), (h, ours["overlap"]))

    def test_kernel_breakdown(self):
        for c in self.cases:
            with self.subTest(trace=c.name):
                o, types, r = c.ours, c.hta["types"], c.rows
                split = r.type_split()
                # HTA truncates every piece of its split to whole microseconds: its figures are the truncated
                # sums (the same as the exact ones on a trace in whole microseconds).
                # HTA also lists a piece of zero length where two types only touch (the DDP trace's
                # "COMPUTATION overlapping MEMORY", 0 us): the labels compared are those with time.
                self.assertEqual({k for k, v in types.items() if v > 0}, {k for k, (v, _) in split.items() if v > 0})
                for label, (_, truncated) in split.items():
                    self.assertEqual(types.get(label, 0), truncated, label)
                compute = sum(v for k, (v, _) in split.items() if "COMPUTATION" in k)
                comm = sum(v for k, (v, _) in split.items() if "COMMUNICATION" in k)
                comm_alone = sum(v for k, (v, _) in split.items() if "COMMUNICATION" in k and "COMPUTATION" not in k)
                self.assertTrue(close(compute, o["gpu"]["compute_us"] + r.extra_compute()))
                self.assertTrue(close(comm, o["communication"]["total_us"]))
                self.assertTrue(close(comm_alone, o["communication"]["exposed_us"] - r.extra_compute_over("COMMUNICATION")))
                memory_alone = o["gpu"]["memory_exposed_us"] - r.extra_compute_over("MEMORY", also_not=("COMMUNICATION",))
                self.assertTrue(close(split.get("MEMORY", (0.0, 0))[0], memory_alone), (split.get("MEMORY"), memory_alone))
                self.check_top_kernels(c)

    def check_top_kernels(self, c):
        # HTA's kernels by total time, less what ours does not call a kernel (memcpy/memset, cuda_sync rows).
        hta = sorted(((k["sum"], n) for n, k in c.hta["kernels"].items()
                      if k["type"] != "MEMORY" and n not in c.rows.extra_names), key=lambda x: (-x[0], x[1]))
        top = c.ours["kernels"]["top"]
        self.assertEqual(len(top), min(TOP, len(hta)))
        for k, (total, _) in zip(top, hta):  # the same ranking (names may swap only between equal totals)
            self.assertTrue(close(k["total_us"], total), (k["name"], k["total_us"], total))
        for k in top:
            h = c.hta["kernels"].get(k["name"])
            self.assertIsNotNone(h, k["name"])
            self.assertTrue(close(k["total_us"], h["sum"]), k["name"])
            self.assertTrue(close(k["max_us"], h["max"]) and close(k["min_us"], h["min"]), k["name"])
            self.assertEqual(k["count"], round(h["sum"] / h["mean"]), k["name"])
            self.assertEqual(k["communication"], h["type"] == "COMMUNICATION", k["name"])

    def test_steps(self):
        for c in self.cases:
            with self.subTest(trace=c.name):
                ours = c.ours["steps"]["items"] if not c.ours["steps"]["inferred"] else []
                self.assertEqual([s["index"] for s in ours], c.hta["steps"])
                hta = c.rows.steps(c.ours["scope"]["pid"])
                self.assertEqual(len(hta), len(ours))
                for i, (s, (n, start, dur)) in enumerate(zip(ours, hta)):
                    # Ours clamps a step that overlaps the next by a few microseconds (rounding in the profiler).
                    end = min(start + dur, hta[i + 1][1]) if i + 1 < len(hta) else start + dur
                    self.assertEqual(s["index"], n)
                    # Our JSON prints absolute times as doubles: a quarter microsecond at 1.7e15 us.
                    self.assertTrue(close(s["start_us"] - c.rows.min_ts, start, 0.25), (n, s["start_us"], start))
                    self.assertTrue(close(s["duration_us"], end - start), (n, s["duration_us"], end - start))

    def test_host_op_totals(self):
        for c in self.cases:
            with self.subTest(trace=c.name):
                ops = c.ours["ops"]["top"]
                w = c.ours["window"]
                hta = c.rows.host_ops(c.ours["scope"]["pid"], {op["name"] for op in ops}, w["start_us"], w["end_us"])
                for op in ops:
                    count, total = hta[op["name"]]
                    self.assertEqual(op["count"], count, op["name"])
                    self.assertTrue(close(op["total_us"], total), (op["name"], op["total_us"], total))


def ratio(x):
    return "-" if x is None else f"{x:.4f}"


def print_table(cases):
    """Ours against HTA on every trace, in microseconds (what docs/analysis.md's tables quote)."""
    print("\ntrace | window (ours) | lead+tail | HTA span | busy ours | busy HTA | HTA extra busy | idle ours | idle HTA"
          " | compute ours | compute HTA | overlap ours | overlap HTA")
    for c in cases:
        o, t = c.ours, c.hta["temporal"]
        if not t:
            print(f"{c.name} | {o['window']['duration_us']:.3f} | no GPU work | HTA: no GPU rows"
                  f" ({len(c.hta['steps'])} steps, {len(o['ops']['top'])} host ops compared)")
            continue
        ov, hov = o["communication"]["overlap"], c.hta["overlap"]
        print(f"{c.name} | {o['window']['duration_us']:.3f} | {o['idle']['lead_in_us'] + o['idle']['tail_us']:.3f}"
              f" | {t['span']:.3f} | {o['gpu']['busy_us']:.3f} | {t['span'] - t['idle']:.3f} | {c.rows.extra_busy():.3f}"
              f" | {o['gpu']['idle_us']:.3f} | {t['idle']:.3f} | {o['gpu']['compute_us']:.3f} | {t['compute']:.3f}"
              f" | {ratio(ov)} | {ratio(hov)}")
    print("\ntrace | stream | HTA host_wait | kernel_wait | other | in flight | ours loader+sync+runtime | launch gap"
          " | overhead | event wait + other")
    for c in cases:
        if not c.gpu:
            continue
        o = c.ours["idle"]
        for s, h in sorted(c.hta["idle_per_stream"].items()):
            fl = c.rows.launch_in_flight(s, c.ours["launch_gap"]["min_gap_us"])
            mine = (f"{o['loader_stall_us'] + o['sync_us'] + o['runtime_us']:.3f} | {o['launch_gap_us']:.3f}"
                    f" | {o['launch_overhead_us']:.3f} | {o['event_wait_us'] + o['other_us']:.3f}")
            print(f"{c.name} | {s} | {h.get('host_wait', 0):.2f} | {h.get('kernel_wait', 0):.2f} | {h.get('other', 0):.2f}"
                  f" | {fl:.3f} | " + (mine if len(c.hta["idle_per_stream"]) == 1 else "(device: " + mine + ")"))


def print_hta_defaults():
    """HTA as it runs out of the box on every stored trace (the last step dropped, times read as doubles and
    rounded inward to whole microseconds), then with every step but its rounding kept."""
    os.environ.pop("HTA_DISABLE_NS_ROUNDING", None)
    print("\nHTA defaults: trace | steps | span | busy | idle | compute | overlap")
    for path in sorted(glob.glob(os.path.join(TESTDATA, "*.json.gz"))):
        for last in (False, True):
            a, _ = hta_figures.load(path, include_last_profiler_step=last, exact=False)
            f = hta_figures.figures(a, 2)
            t = f["temporal"]
            print(f"{os.path.basename(path).split('.')[0]} | {'all' if last else 'last dropped'} | {t['span']:.3f}"
                  f" | {t['span'] - t['idle']:.3f} | {t['idle']:.3f} | {t['compute']:.3f} | {ratio(f['overlap'])}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    CLI = sys.argv[1]
    defaults = "--hta-defaults" in sys.argv[2:]
    result = unittest.main(argv=[sys.argv[0], "-v"], exit=False).result
    if defaults:
        print_hta_defaults()
    sys.exit(0 if result.wasSuccessful() else 1)
