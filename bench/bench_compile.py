#!/usr/bin/env python3
"""What TorchInductor costs a script under the launcher (not run in CI; the tests run a script's own
torch.compile through the aot_eager backend, python/tests/test_corpus.py, and the compile knob's compiled call
in one process).

1. The corpus's compiled.py (`model = torch.compile(model)`, TorchInductor: on the CPU it builds C++ kernels)
   run plainly and under the launcher (`python -m tunebench.launch`), one after the other: each run's wall time,
   its steps, and whether the two printed the same losses.
2. The corpus's imagenet_steplr.py under `--set compile=on` (the launcher compiles the script's model from
   outside) and without it: each run's wall time, its steps and the median step after the first (the
   compilation is in the first steps), and whether the run said anything about compile.
3. The corpus's checkpoint_whole_model.py under `--set compile=on,amp=bf16`: its wall time, and whether its
   whole-model checkpoint holds anything of TuneBench's (it must not), against no knob.

Each line is one round's; TorchInductor caches what it built (/tmp/torchinductor_$USER), so the first round
pays the C++ builds and the later ones mostly do not.

usage: bench_compile.py [--rounds 2] [--python P]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CORPUS = os.path.join(ROOT, "python", "tests", "corpus")
ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="0")


def plain(python, script, args, cwd):
    """(wall s, stdout) of `python script args` in cwd; exits with its stderr when it fails."""
    t = time.monotonic()
    p = subprocess.run([python, script] + list(args), cwd=cwd, env=ENV, capture_output=True)
    if p.returncode != 0:
        sys.exit("bench_compile: %s failed: %s" % (script, p.stderr.decode(errors="replace")[-2000:]))
    return time.monotonic() - t, p.stdout.decode()


def launched(python, launcher_args, script, args, cwd):
    """(wall s, the launcher's messages, the script's stdout) of `python -m tunebench.launch LAUNCHER_ARGS
    script args` in cwd; exits with its stderr when it fails."""
    env = dict(ENV, PYTHONPATH=os.path.join(ROOT, "python"))
    with tempfile.TemporaryFile() as out:
        t = time.monotonic()
        p = subprocess.run([python, "-m", "tunebench.launch", "--out-fd", str(out.fileno())] + list(launcher_args) +
                           [script] + list(args), cwd=cwd, env=env, capture_output=True, pass_fds=[out.fileno()])
        s = time.monotonic() - t
        if p.returncode != 0:
            sys.exit("bench_compile: %s under the launcher failed: %s"
                     % (script, p.stderr.decode(errors="replace")[-2000:]))
        out.seek(0)
        messages = [json.loads(line) for line in out.read().splitlines() if line.strip()]
    return s, messages, p.stdout.decode()


def steps_of(messages):
    return [m for m in messages if m["type"] == "step"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    compiled = os.path.join(CORPUS, "compiled.py")
    imagenet = os.path.join(CORPUS, "imagenet_steplr.py")
    ckpt_script = os.path.join(CORPUS, "checkpoint_whole_model.py")
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            d = os.path.join(tmp, "r%d" % r)
            os.makedirs(d)
            # 1. the script's own torch.compile, plainly and launched
            p_s, p_out = plain(a.python, compiled, [], d)
            l_s, msgs, l_out = launched(a.python, [], compiled, [], d)
            iterations = len(re.findall(r"(?m)^epoch \d+ iter \d+ loss", p_out))
            print("round %d  compiled.py (TorchInductor): plain %.1f s, launched %.1f s; %d iterations, %d steps, "
                  "losses %s" % (r, p_s, l_s, iterations, len(steps_of(msgs)),
                                 "the same" if l_out == p_out else "DIFFERENT"))
            # 2. the compile knob on a script that does not compile
            lines = []
            for setting in ("compile=on", "compile=off"):
                s, msgs, _ = launched(a.python, ["--set", setting], imagenet, ["--out", d, "--epochs", "1"], d)
                steps = steps_of(msgs)
                said = [m["message"] for m in msgs if m["type"] == "warning" and "compile" in m.get("message", "")]
                lines.append("%s %.1f s, %d steps, step after the first %.1f ms%s"
                             % (setting, s, len(steps), statistics.median(x["wall_ns"] for x in steps[1:]) / 1e6,
                                ", said: " + "; ".join(said) if said else ""))
            print("round %d  imagenet_steplr.py: %s" % (r, " | ".join(lines)))
            # 3. a whole-model checkpoint under the compiled call
            ckpt = os.path.join(d, "ckpt.pt")
            s, msgs, _ = launched(a.python, ["--set", "compile=on,amp=bf16"], ckpt_script, ["--ckpt", ckpt], d)
            with zipfile.ZipFile(ckpt) as z:
                ours = b"tunebench" in z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
            base, _, _ = launched(a.python, [], ckpt_script, ["--ckpt", ckpt + ".off"], d)
            print("round %d  checkpoint_whole_model.py --set compile=on,amp=bf16: %.1f s (no knob: %.1f s), %d steps, "
                  "checkpoint %s" % (r, s, base, len(steps_of(msgs)), "HOLDS TuneBench's objects" if ours else "clean"))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
