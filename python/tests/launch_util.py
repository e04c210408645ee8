"""What the launcher's tests share: the child process the C++ parent would start, and readers of what it
writes (trace chunks, the resident set)."""

import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
import unittest

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MIB = 1 << 20


def vm_rss():
    """This process's resident set as the kernel reports it for people (kB in /proc/self/status)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def tunebench_events(path):
    with open(path) as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("cat") == "tunebench"]


def step_ranges(path):
    """ProfilerStep#N -> (ts, end) in the chunk at `path`."""
    with open(path) as f:
        return {int(e["name"][len("ProfilerStep#"):]): (e["ts"], e["ts"] + e["dur"])
                for e in json.load(f)["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")}


class ScriptTest(unittest.TestCase):
    """A test case with a fresh folder holding one script: SCRIPT_TEXT as SCRIPT_NAME, at self.script."""
    SCRIPT_NAME = "train.py"
    SCRIPT_TEXT = ""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.script = os.path.join(self.dir.name, self.SCRIPT_NAME)
        with open(self.script, "w") as f:
            f.write(self.SCRIPT_TEXT)

    def tearDown(self):
        self.dir.cleanup()


class SharedRuns(ScriptTest):
    """A ScriptTest whose class keeps the runs that several of its tests read (shared_run): each made once, by
    the first test that asks, in a folder the class keeps until its end."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls._shared_dir = tempfile.TemporaryDirectory()
        cls._shared = {}

    @classmethod
    def tearDownClass(cls):
        cls._shared_dir.cleanup()
        super().tearDownClass()

    def shared_run(self, name, text, args=(), launcher_args=(), env=None, timeout=120):
        """The finished Child of script `text` (its "{dir}": the class's folder) written as NAME.py there and run
        under the launcher; .result is what finish() returned: (exit code, stdout, stderr)."""
        if name not in self._shared:
            folder = self._shared_dir.name
            path = os.path.join(folder, name + ".py")
            with open(path, "w") as f:
                f.write(text.replace("{dir}", folder))
            c = Child(path, [a.replace("{dir}", folder) for a in args],
                      [a.replace("{dir}", folder) for a in launcher_args], env=env, cwd=folder)
            c.result = c.finish(timeout)
            self._shared[name] = c
        return self._shared[name]

    @property
    def shared_dir(self):
        return self._shared_dir.name


class Plain:
    """`python SCRIPT ARGS` run plainly in a thread, beside a Child of the same script: the two take the two
    cores, where one after the other they took twice as long (a process that imports torch and builds an
    optimizer, which imports torch._dynamo, costs 2-3 s here). result(): (exit code, stdout, stderr)."""

    def __init__(self, script, args=(), env=None, cwd=None, timeout=300):
        self._got = []
        env = dict(env if env is not None else os.environ, PYTHONPATH=PKG)

        def run():
            try:
                p = subprocess.run([sys.executable, script] + list(args), cwd=cwd, env=env, capture_output=True,
                                   timeout=timeout)
                self._got.append((p.returncode, p.stdout.decode(), p.stderr.decode()))
            except BaseException as e:  # a timeout: raised by result(), not lost in the thread
                self._got.append(e)
        self._thread = threading.Thread(target=run)
        self._thread.start()

    def result(self):
        self._thread.join()
        if isinstance(self._got[0], BaseException):
            raise self._got[0]
        return self._got[0]


class Child:
    def __init__(self, script, args=(), launcher_args=(), with_input=False, env=None, cwd=None):
        self.out_r, out_w = os.pipe()
        fds = [out_w]
        cmd = [sys.executable, "-m", "tunebench.launch", "--out-fd", str(out_w)]
        self.in_w = None
        if with_input:
            in_r, self.in_w = os.pipe()
            fds.append(in_r)
            cmd += ["--in-fd", str(in_r)]
        cmd += list(launcher_args) + [script] + list(args)
        env = dict(env if env is not None else os.environ, PYTHONPATH=PKG)
        self.p = subprocess.Popen(cmd, pass_fds=fds, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.close(out_w)
        if with_input:
            os.close(in_r)
        self.buf = b""
        self.messages = []

    def next(self, timeout=60):
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.out_r], [], [], left)
            if not r:
                return None
            chunk = os.read(self.out_r, 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        m = json.loads(line)
        self.messages.append(m)
        return m

    def until(self, pred, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = self.next(deadline - time.time())
            if m is None:
                return None
            if pred(m):
                return m
        return None

    def send(self, **msg):
        os.write(self.in_w, (json.dumps(dict(msg, v=1)) + "\n").encode())

    def finish(self, timeout=60):
        while self.next(timeout) is not None:
            pass
        out, err = self.p.communicate(timeout=timeout)
        return self.p.returncode, out.decode(), err.decode()
