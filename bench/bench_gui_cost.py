#!/usr/bin/env python3
"""The window's own cost (not run in CI): the GUI's demo against the same configuration without a window.

Three runs per round, alternating their order so drift on this shared machine hits each:
  gui    `tunebench --quit-after S --export X.json` (the demo: a `serve` child training mnist_cnn on the demo
         JPEGs, workers=0, cpu_allocator=glibc_tuned, a trace chunk every 20 steps, every panel live), under
         QT_QPA_PLATFORM=offscreen (widgets paint into an image in the GUI process) or --platform xvfb (xcb on
         a virtual X server; the server's own CPU is not the GUI's and is not counted). The GUI's and the
         child's CPU seconds come from /proc/PID/stat between --settle and S-1 s, over the same wall time.
         The child's throughput is the GUI's own figure (the export's segment throughput: samples over
         wall time of the measured steps, warm-up excluded).
  serve  the same `tunebench-cli serve` command with its protocol read by this script, no window: what the
         child does when nobody draws it.
  cli    `tunebench-cli run --model mnist_cnn --data imagefolder:DEMO --set workers=0,cpu_allocator=glibc_tuned
         --steps N --trace T.json` (the issue's reference; --no-trace drops --trace): its measured throughput.
Prints per round and the medians: the GUI's CPU seconds per wall second, and gui/cli and gui/serve throughput.

usage: bench_gui_cost.py [--gui build/app/tunebench] [--cli build/app/tunebench-cli] [--seconds 60]
                         [--settle 20] [--steps 400] [--rounds 2] [--platform offscreen|xvfb] [--no-trace]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")
KNOBS = "cpu_allocator=glibc_tuned,workers=0"  # the demo's (MainWindow::startDemo), sorted as it passes them
TRACE_EVERY = 20


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK  # fields 14 and 15 of stat(5), counted after "pid (comm)"


def parent_of(pid):
    try:
        with open("/proc/%s/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError):
        return None


def program_of(pid):
    """argv[0]'s file name (not stat's comm: serve renames its training thread, the main one)."""
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return os.path.basename(f.read().split(b"\0")[0].decode())
    except OSError:
        return ""


def find_descendant(root, name):
    pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    parents = {p: parent_of(p) for p in pids}
    todo = [root]
    while todo:
        pid = todo.pop()
        for c, pp in parents.items():
            if pp == pid:
                if program_of(c) == name:
                    return c
                todo.append(c)
    return None


def demo_dir(cli):
    """The demo's image folder where the GUI keeps it (QStandardPaths::CacheLocation), made once."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    d = os.path.join(cache, "TuneBench", "tunebench", "demo-images-640x480")
    marker = os.path.join(d, ".tunebench-demo-complete")
    if not os.path.exists(marker):
        os.makedirs(d, exist_ok=True)
        subprocess.run([cli, "make-dataset", "--out", d, "--images", "256", "--size", "640x480", "--classes", "10"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(marker, "w") as f:
            f.write("ok\n")
    return d


def run_gui(a, tmp):
    out = os.path.join(tmp, "gui.json")
    env = dict(os.environ, TUNEBENCH_CLI=a.cli, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    cmd = [a.gui, "--quit-after", str(a.seconds), "--export", out]
    if a.platform == "xvfb":
        env["QT_QPA_PLATFORM"] = "xcb"
        cmd = ["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24"] + cmd
    else:
        env["QT_QPA_PLATFORM"] = "offscreen"
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    gui = p.pid if a.platform != "xvfb" else None
    while gui is None and time.monotonic() - t0 < 10:  # xvfb-run's sh starts the GUI
        gui = find_descendant(p.pid, "tunebench")
        time.sleep(0.1)
    time.sleep(max(0.0, a.settle - (time.monotonic() - t0)))
    child = find_descendant(gui, "tunebench-cli")
    w0, g0, c0 = time.monotonic(), cpu_seconds(gui), cpu_seconds(child) if child else None
    time.sleep(max(1.0, a.seconds - 1 - (time.monotonic() - t0)))
    w1, g1, c1 = time.monotonic(), cpu_seconds(gui), cpu_seconds(child) if child else None
    p.wait(timeout=120)
    if None in (g0, g1, c0, c1):
        sys.exit("bench_gui_cost: the GUI or its serve child was not found (did the demo start?)")
    with open(out) as f:
        segs = json.load(f).get("segments", [])
    if not segs:
        sys.exit("bench_gui_cost: the export has no segment throughput (the GUI measured no step?)")
    wall = w1 - w0
    return {"gui_share": (g1 - g0) / wall, "child_share": (c1 - c0) / wall, "wall": wall,
            "sps": segs[0]["samples_per_s"], "steps": segs[0]["measured_steps"],
            "observer": segs[0].get("observer_cpu_share")}


def run_serve(a, data, tmp):
    """The GUI's child command, its protocol read here (a few lines a second), for as long as the GUI ran."""
    trace_dir = tempfile.mkdtemp(dir=tmp)
    cmd = [a.cli, "serve", "--model", "mnist_cnn", "--data", "imagefolder:" + data, "--set", KNOBS,
           "--trace-dir", trace_dir, "--trace-every", str(TRACE_EVERY)]
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         env=env)
    t0 = time.monotonic()
    samples = wall = 0
    for line in p.stdout:
        m = json.loads(line) if line.startswith("{") else {}
        if m.get("type") == "step" and not m.get("warmup") and not m.get("skipped") and m.get("wall_ns", 0) > 0:
            samples += m["samples"]
            wall += m["wall_ns"] / 1e9
        if time.monotonic() - t0 > a.seconds:
            break
    p.stdin.close()  # serve stops when its stdin closes
    p.wait(timeout=60)
    shutil.rmtree(trace_dir, ignore_errors=True)
    return {"sps": samples / wall if wall else float("nan")}


def run_cli(a, data, tmp):
    out = os.path.join(tmp, "run.json")
    cmd = [a.cli, "run", "--model", "mnist_cnn", "--data", "imagefolder:" + data, "--set", KNOBS,
           "--steps", str(a.steps), "--json", out]
    if not a.no_trace:
        cmd += ["--trace", os.path.join(tmp, "run-trace.json")]
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, timeout=900)
    with open(out) as f:
        d = json.load(f)
    return {"sps": d["throughput"]["samples_per_s"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gui", default=os.path.join(ROOT, "build", "app", "tunebench"))
    p.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "tunebench-cli"))
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--settle", type=float, default=20, help="seconds before the CPU is counted (start, warm-up)")
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--platform", choices=["offscreen", "xvfb"], default="offscreen")
    p.add_argument("--no-trace", action="store_true", help="the cli run without --trace")
    p.add_argument("--skip-serve", action="store_true")
    a = p.parse_args()
    a.cli = os.path.abspath(a.cli)
    data = demo_dir(a.cli)
    tmp = tempfile.mkdtemp(prefix="tunebench-bench-gui-")
    kinds = ["gui", "cli"] + ([] if a.skip_serve else ["serve"])
    res = {k: [] for k in kinds}
    try:
        for r in range(a.rounds):
            order = kinds if r % 2 == 0 else kinds[::-1]
            for k in order:
                res[k].append(run_gui(a, tmp) if k == "gui" else run_cli(a, data, tmp) if k == "cli"
                              else run_serve(a, data, tmp))
            g = res["gui"][-1]
            line = ("round %d (%s): gui %.3f CPU s/s (child %.2f) over %.0f s, %.1f samples/s over %d steps; "
                    "cli %.1f samples/s" % (r + 1, ",".join(order), g["gui_share"], g["child_share"], g["wall"],
                                            g["sps"], g["steps"], res["cli"][-1]["sps"]))
            if "serve" in res:
                line += "; serve without window %.1f samples/s" % res["serve"][-1]["sps"]
            if g["observer"] is not None:
                line += "; the window's own figure %.3f" % g["observer"]
            print(line, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = lambda k, f: statistics.median(x[f] for x in res[k])
    gui_cli = [g["sps"] / c["sps"] for g, c in zip(res["gui"], res["cli"])]
    print("GUI (%s): %.3f CPU seconds per wall second (median of %d; range %.3f-%.3f); child %.2f"
          % (a.platform, med("gui", "gui_share"), a.rounds, min(x["gui_share"] for x in res["gui"]),
             max(x["gui_share"] for x in res["gui"]), med("gui", "child_share")))
    print("throughput: gui %.1f, cli run %.1f samples/s; gui/cli %.3f (median; range %.3f-%.3f)"
          % (med("gui", "sps"), med("cli", "sps"), statistics.median(gui_cli), min(gui_cli), max(gui_cli)))
    if "serve" in res:
        gui_serve = [g["sps"] / s["sps"] for g, s in zip(res["gui"], res["serve"])]
        print("            serve without window %.1f samples/s; gui/serve %.3f (median; range %.3f-%.3f)"
              % (med("serve", "sps"), statistics.median(gui_serve), min(gui_serve), max(gui_serve)))


if __name__ == "__main__":
    sys.exit(main())
