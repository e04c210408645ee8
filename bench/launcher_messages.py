"""One run of a script under the launcher (`python -m tunebench.launch`), read as its protocol messages: what
the script-tracing benches (bench_trace_boundary.py, bench_watch_tax.py) measure from. Not run in CI."""

import json
import os
import select
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def launch(python, launcher_args, script, who, env_extra=None, timeout_s=900, script_args=(), cwd=None):
    """The messages of `python -m tunebench.launch LAUNCHER_ARGS SCRIPT SCRIPT_ARGS` (run in `cwd`); exits with
    `who`'s one line when the run fails or does not end within `timeout_s`."""
    r, w = os.pipe()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), **(env_extra or {}))
    # The script's stderr into a file: a pipe nobody reads while the messages are read fills with a progress
    # bar's 64 KiB (tqdm) and stops the script in its write.
    errf = tempfile.TemporaryFile()
    p = subprocess.Popen([python, "-m", "tunebench.launch", "--out-fd", str(w)] + launcher_args + [script] + list(script_args),
                         pass_fds=[w], env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=errf)
    os.close(w)
    buf, deadline = b"", time.time() + timeout_s
    while time.time() < deadline:
        ready, _, _ = select.select([r], [], [], 5)
        if ready:
            data = os.read(r, 1 << 16)
            if not data:
                break
            buf += data
    os.close(r)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        sys.exit("%s: the run did not end" % who)
    errf.seek(0)
    err = errf.read()
    errf.close()
    if p.returncode != 0:
        sys.exit("%s: the run failed: %s" % (who, err.decode(errors="replace")[-2000:]))
    return [json.loads(line) for line in buf.splitlines() if line.strip()]
