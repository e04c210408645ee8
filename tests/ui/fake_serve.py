#!/usr/bin/env python3
"""A stand-in for `tunebench-cli serve` that speaks the run protocol (docs/protocol.md) for the UI tests.

Modes: normal (steps until stop or --steps), crash (SIGKILLs itself after --crash-after steps, stderr says
why), hang (ignores stop and stdin EOF: the controller must terminate/kill it), garbage (mixes non-JSON
lines into stdout). Throughput: 1000 samples/s, doubled while workers > 0, so a `set` is measurable.
"""
import json, os, select, signal, sys, time

args = sys.argv[1:]
def opt(name, default):
    return args[args.index(name) + 1] if name in args else default

mode = opt("--mode", "normal")
steps = int(opt("--steps", "0"))
crash_after = int(opt("--crash-after", "8"))
step_ms = float(opt("--step-ms", "10"))

def send(**m):
    m["v"] = 1
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()

knobs = [
    {"id": "workers", "title": "Loader worker threads", "type": "int", "default": 0, "recommended": 4, "min": 0, "max": 32,
     "value": 0, "applicable": True, "reason": "", "changes_numerics": False, "seeds": ["000", "003"]},
    {"id": "pin_memory", "title": "Pinned memory", "type": "bool", "default": "off", "recommended": "on", "value": "off",
     "applicable": False, "reason": "no CUDA device", "changes_numerics": False},
    {"id": "amp", "title": "Mixed precision", "type": "enum", "default": "off", "recommended": "fp16",
     "choices": ["off", "fp16", "bf16"], "value": "off", "applicable": True, "changes_numerics": True},
]
config = {"workers": "0", "pin_memory": "off", "amp": "off"}
send(type="hello", versions={"tunebench": "0.1.0", "libtorch": "1.13.1", "cuda": "", "cudnn": ""},
     device={"kind": "cpu", "name": "fake cpu", "cores": 2, "memory_bytes": 0}, knobs=knobs,
     collector={"enabled": False, "reason": "no CUDA driver"})
send(type="started", model="mnist_cnn", data="synthetic", input=[1, 28, 28], classes=10, config=config, rev=0)
if mode == "garbage":
    sys.stdout.write("this is not json\n{\"half\": \n")
    sys.stdout.flush()

rev, i, warm_left, stop = 0, 0, 3, False
stdin_open = True
buf = b""
if mode == "hang":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL ends it
while True:
    # Read whatever the parent sent, without blocking the step loop.
    while stdin_open:
        r, _, _ = select.select([sys.stdin.buffer], [], [], 0)
        if not r:
            break
        chunk = os.read(sys.stdin.fileno(), 4096)
        if not chunk:
            stdin_open = False
            if mode != "hang":
                stop = True
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            try:
                m = json.loads(line)
            except ValueError:
                send(type="error", message="malformed line", recoverable=True)
                continue
            if m.get("type") == "set":
                rev += 1
                config[m["knob"]] = str(m["value"])
                warm_left = 2
                send(type="config_applied", rev=rev, knobs=config, changed={m["knob"]: str(m["value"])})
            elif m.get("type") == "stop" and mode != "hang":
                stop = True
            elif m.get("type") == "tune" and m.get("plan_only"):
                # The price alone (engine tune_done_message of a plan_only tune): nothing tried, nothing applied.
                send(type="tune_progress", phase="plan", message="~140 s to try each of the 6 knobs once", fraction=0.1)
                send(type="tune_done", report_html="", report_json="", speedup=None, speedup_ci=None, kept=[],
                     final_config=config, baseline_throughput=1000.0, final_throughput=1000.0,
                     budget_s=m.get("budget_s"), elapsed_s=9.0, trials=1, skipped=0, verdict="none",
                     headline={"kind": "planned", "title": "Priced: ~140 s to try each of the 6 knobs once; nothing was tried"},
                     plan="~140 s to try each of the 6 knobs once, finals included (budget %s)" % json.dumps(m.get("budget_s")),
                     plan_s=140.0, plan_only=True, ended="priced one pass and stopped (plan only)")
            elif m.get("type") == "tune":
                # The budget asked for, said back: the GUI's "auto" reaches the serve as the protocol's "auto".
                send(type="tune_progress", phase="measure", message="baseline (budget %s)" % json.dumps(m.get("budget_s")),
                     fraction=0.5)
                # As the real serve: the tune_done message (engine tune_done_message), then the result applied.
                send(type="tune_done", report_html="", report_json="", speedup=1.5, speedup_ci=[1.4, 1.6],
                     fresh_processes=False, kept=["workers=4"], final_config=dict(config, workers="4"),
                     baseline_throughput=1000.0, final_throughput=1500.0, budget_s=60.0, elapsed_s=17.0, trials=9,
                     skipped=11, noise="quiet: ±2.0%",
                     ended="every applicable knob was tried (9 trials; 11 knobs or values skipped, 1 of them not "
                           "applicable here) and the final alternation confirmed the result")
                rev += 1
                config["workers"] = "4"
                warm_left = 2
                send(type="config_applied", rev=rev, knobs=config, changed={"workers": "4"}, source="auto-tune")
    if stop:
        send(type="done", summary={"steps": i, "throughput_median": 1000.0, "unit": "samples/s", "reason": "stopped"})
        sys.exit(0)
    if steps and i >= steps:
        send(type="done", summary={"steps": i, "throughput_median": 1000.0, "unit": "samples/s", "reason": "steps"})
        sys.exit(0)
    if mode == "crash" and i >= crash_after:
        sys.stderr.write("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    sps = 1000.0 * (2.0 if int(config.get("workers", "0")) > 0 else 1.0) * (1.0 + 0.02 * ((i * 7) % 5 - 2) / 2)
    samples = 32
    wall = int(samples / sps * 1e9)
    send(type="step", i=i, samples=samples, wall_ns=wall, data_wait_ns=wall // 3, h2d_ns=0, loss=2.3 - 0.001 * i,
         config_rev=rev, warmup=warm_left > 0, skipped=False, t_ns=int(time.monotonic_ns()))
    if i == 5:  # what the engine's analyses say of a loader-bound CPU run: one knob that applies, one that cannot
        send(type="finding", kind="loader_stall", message="GPU waited for the loader 33% of step time", knob="workers",
             value="4", share=0.33, max_speedup=1.49)
        send(type="finding", kind="h2d", message="host-to-device copies from pageable memory", knob="pin_memory",
             value="on", share=0.05, max_speedup=1.05)
    if warm_left > 0:
        warm_left -= 1
    i += 1
    time.sleep(step_ms / 1000.0)
