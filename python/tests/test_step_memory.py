"""The memory each step reports, through the launcher run as the C++ parent runs it (tests/launch_util.Child):
in the step messages, in the trace chunks' counters, in an out-of-memory error; and the reader itself."""

import json
import os
import textwrap
from unittest import mock

from tests.launch_util import MIB, Child, SharedRuns, step_ranges, vm_rss

# Steps that each make a 4 MiB output; with `leak` the script keeps every output (without .detach(): the graph
# hangs on too), as a script that collects its predictions for a metric by mistake does. It prints after each
# iteration the resident set the kernel reports in /proc/self/status, to check the launcher's figure against.
STEP_OUTPUTS = textwrap.dedent('''
    import sys, torch
    torch.manual_seed(0)
    torch.set_num_threads(1)

    def resident():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))

    mode = sys.argv[1]
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4096))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 64)
    outputs = []
    for i in range(100):
        out = model(x)  # 256 x 4096 floats: 4 MiB
        if mode == "cpu-oom" and i == 3:
            torch.empty(2 ** 50, dtype=torch.uint8)  # a petabyte: the CPU allocator refuses it
        if mode == "cuda-oom" and i == 1:  # what the CUDA caching allocator raises, raised by the script
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
        loss = out.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if mode == "leak":
            outputs.append(out)
        print(i, resident(), flush=True)
''')
# The same on a CUDA device: every other step also allocates and frees 256 MiB at once (a peak that leaves
# nothing allocated), `leak` keeps each step's 1 MiB output, `oom` asks for twice the device after step 3's
# update (so its backward ran: that iteration is still sent as a step, after the error).
CUDA_STEPS = textwrap.dedent('''
    import sys, torch
    torch.manual_seed(0)
    dev = torch.device("cuda")
    mode = sys.argv[1]
    model = torch.nn.Linear(1024, 1024).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 1024, device=dev)
    kept = []
    for i in range(100):
        out = model(x)  # 256 x 1024 floats: 1 MiB
        loss = out.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % 2 == 1:
            tmp = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
            del tmp
        if mode == "leak":
            kept.append(out)
        if mode == "oom" and i == 3:
            torch.empty(torch.cuda.get_device_properties(dev).total_memory * 2, dtype=torch.uint8, device=dev)
        print(i, torch.cuda.memory_allocated(dev), flush=True)
''')


class StepMemoryTest(SharedRuns):
    """The memory each step reports: in the step messages, in the trace chunks' counters, in an
    out-of-memory error; and the reader itself, in this process. The leaking run is traced: the steps'
    figures and the chunks' counters come from the same run."""
    SCRIPT_NAME = "outputs.py"
    SCRIPT_TEXT = STEP_OUTPUTS

    def run_steps(self, mode):
        """(steps, the script's own VmRSS after each iteration, child) of 20 steps; "leak" traced in chunks of 5."""
        traced = ["--trace-dir", "{dir}/trace", "--trace-every", "5", "--trace-share", "0"] if mode == "leak" else []
        c = self.shared_run("outputs_" + mode, STEP_OUTPUTS, args=[mode], launcher_args=["--steps", "20"] + traced)
        code, out, err = c.result
        self.assertEqual(code, 0, err)
        printed = {int(i): int(rss) for i, rss in (line.split() for line in out.splitlines())}
        return [m for m in c.messages if m["type"] == "step"], printed, c

    def test_every_step_says_its_resident_set_and_a_leak_makes_it_rise(self):
        import torch
        flat, printed, _ = self.run_steps("flat")
        self.assertEqual(len(flat), 20)
        for s in flat:
            mem = s["memory"]
            if not torch.cuda.is_available():
                self.assertEqual(set(mem), {"host_rss"})  # a CPU run: no device keys, no CUDA call
            self.assertGreater(mem["host_rss"], 10 * MIB)
            # Read at the step's end, right after the script's own reading of the same kernel counter (the
            # next forward ends the step): the same figure, to the page on a quiet machine (0.03 MiB apart at
            # most here). Between the two reads the process's other threads may take or give back the
            # allocator's 4 MiB blocks: 8 MiB apart was seen once in 20 steps, under the suite run beside a
            # build. So: nearly every step to the page, none further than a few blocks.
            self.assertLess(abs(mem["host_rss"] - printed[s["i"]]), 12 * MIB, (s["i"], mem, printed[s["i"]]))
        close = sum(abs(s["memory"]["host_rss"] - printed[s["i"]]) < MIB for s in flat)
        self.assertGreaterEqual(close, 16, [(s["i"], s["memory"]["host_rss"] - printed[s["i"]]) for s in flat])
        rss = [s["memory"]["host_rss"] for s in flat]
        # Without the leak the allocator's 4 MiB blocks come and go (rss[2:] moved 8-25 MiB here, both ways; 44
        # MiB up once in a CI run beside the whole suite): it stays under what the leak below must reach.
        self.assertLess(rss[19] - rss[2], 17 * 4 * MIB * 0.9, rss)
        leak, printed, _ = self.run_steps("leak")
        rss = [s["memory"]["host_rss"] for s in leak]
        # Each step keeps 4 MiB more: 4 MiB a step over the run, and every 10 steps higher than the step 10
        # before (the allocator's own blocks move the set by up to 8 MiB either way between two steps, as
        # above, and a clean-clone CI run beside the whole suite saw it stand still for four steps, 16 MiB of
        # the leak unseen until the fifth: ten steps' 40 MiB cannot hide).
        self.assertGreaterEqual(rss[19] - rss[2], 17 * 4 * MIB * 0.9, rss)
        for a, b in zip(rss[2:], rss[12:]):
            self.assertGreater(b, a, rss)

    def test_the_chunks_hold_each_steps_memory_as_counters_on_their_clock(self):
        import torch
        steps, _, c = self.run_steps("leak")
        chunks = [m for m in c.messages if m["type"] == "trace"]
        self.assertEqual([(m["first_step"], m["last_step"]) for m in chunks], [(0, 4), (5, 9), (10, 14), (15, 19)])
        drawn = []
        for m in chunks:
            with open(m["path"]) as f:
                doc = json.load(f)
            self.assertEqual(doc["tunebench_run"], "script")  # read by the analyses: a script's trace
            events = doc["traceEvents"]
            mark = next(e for e in events if e.get("name") == "TuneBench: clock")
            counters = [e for e in events if e.get("ph") == "C"]
            if not torch.cuda.is_available():
                self.assertEqual({e["name"] for e in counters}, {"memory: host RSS"})
            rss = [e for e in counters if e["name"] == "memory: host RSS"]
            own = steps[m["first_step"]:m["last_step"] + 1]
            self.assertEqual([e["args"]["value"] for e in rss], [s["memory"]["host_rss"] for s in own])
            ranges = step_ranges(m["path"])
            # The counters are placed by the chunk's clock marker: late by up to its bracket (the thread
            # descheduled between the marker's reading and its stamp), never early.
            late = float(doc["tunebench_clock_bracket_us"])
            for e, s in zip(rss, own):
                self.assertEqual(set(e), {"ph", "name", "pid", "tid", "ts", "args"})
                self.assertEqual((e["pid"], e["tid"]), (mark["pid"], 0))  # the training process's counter track
                # At the step's end on the chunk's clock: inside the step's range, which closes once the step's
                # message is out (later still when the writer's thread held the GIL), and before the next one.
                start, end = ranges[s["i"]]
                self.assertGreater(e["ts"], start, (e, s["i"], ranges))
                self.assertLessEqual(e["ts"], end + 200 + late, (e, s["i"], ranges, late))
                if s["i"] + 1 in ranges:
                    self.assertLessEqual(e["ts"], ranges[s["i"] + 1][0] + 200 + late, (e, late))
            drawn += [e["args"]["value"] for e in rss]
        self.assertEqual(len(drawn), 20)
        self.assertGreaterEqual(drawn[-1] - drawn[2], 17 * 4 * MIB * 0.9, drawn)  # the leak, chunk after chunk

    def test_an_out_of_memory_error_says_the_memory_and_the_last_step(self):
        c = Child(self.script, args=["cpu-oom"])
        code, _, _ = c.finish()
        self.assertEqual(code, 1)
        err = next(m for m in c.messages if m["type"] == "error")
        self.assertIn("DefaultCPUAllocator: can't allocate memory", err["message"])
        steps = [m for m in c.messages if m["type"] == "step"]
        self.assertEqual(len(steps), 3)
        self.assertEqual(err["after_step"], 2)  # it failed in the iteration after step 2
        self.assertGreater(err["memory"]["host_rss"], 10 * MIB)
        self.assertLess(abs(err["memory"]["host_rss"] - steps[-1]["memory"]["host_rss"]), 32 * MIB)
        c = Child(self.script, args=["cuda-oom"])
        code, _, _ = c.finish()
        self.assertEqual(code, 1)
        err = next(m for m in c.messages if m["type"] == "error")
        self.assertEqual(err["message"], "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB")
        self.assertEqual(err["after_step"], 0)
        self.assertIn("host_rss", err["memory"])

    def test_on_cuda_each_step_says_its_own_peak_and_an_oom_says_the_memory(self):
        import torch
        if not torch.cuda.is_available():
            self.skipTest("no CUDA device")
        script = os.path.join(self.dir.name, "cuda_steps.py")
        with open(script, "w") as f:
            f.write(CUDA_STEPS)
        total = torch.cuda.get_device_properties(0).total_memory
        tdir = os.path.join(self.dir.name, "trace")
        c = Child(script, args=["leak"], launcher_args=["--steps", "20", "--trace-dir", tdir, "--trace-every", "5",
                                                           "--trace-share", "0"])
        code, out, err = c.finish(timeout=180)
        self.assertEqual(code, 0, err)
        printed = {int(i): int(a) for i, a in (line.split() for line in out.splitlines())}
        steps = [m for m in c.messages if m["type"] == "step"]
        self.assertEqual(len(steps), 20)
        for s in steps:
            mem = s["memory"]
            self.assertEqual(set(mem), {"host_rss", "device_allocated", "device_reserved", "device_peak",
                                        "device_alloc_retries", "device_ooms", "device_total"}, mem)
            self.assertEqual(mem["device_total"], total)
            # Read right after the script's own reading at the end of the iteration: nothing comes between.
            self.assertLess(abs(mem["device_allocated"] - printed[s["i"]]), MIB, (s["i"], mem, printed[s["i"]]))
            self.assertGreaterEqual(mem["device_reserved"], mem["device_allocated"])
            self.assertGreaterEqual(mem["device_peak"], mem["device_allocated"])
            self.assertEqual(mem["device_ooms"], 0)
            if s["i"] % 2:  # the 256 MiB came and went in this step: in its peak alone
                self.assertGreaterEqual(mem["device_peak"], mem["device_allocated"] + 256 * MIB, (s["i"], mem))
            elif s["i"]:  # ... and not in the next one's: the peak was reset after each step
                self.assertLess(mem["device_peak"], mem["device_allocated"] + 64 * MIB, (s["i"], mem))
        alloc = [s["memory"]["device_allocated"] for s in steps]
        self.assertGreaterEqual(alloc[19] - alloc[2], 17 * MIB, alloc)  # the kept outputs
        names = {"memory: host RSS", "memory: device allocated", "memory: device reserved", "memory: device peak",
                 "memory: cudaMalloc retries"}
        for m in (m for m in c.messages if m["type"] == "trace"):
            with open(m["path"]) as f:
                counters = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "C" and e["name"] in names]
            n = m["last_step"] - m["first_step"] + 1
            self.assertEqual(sorted(e["name"] for e in counters), sorted(list(names) * n))
            peaks = [e["args"]["value"] for e in counters if e["name"] == "memory: device peak"]
            self.assertEqual(peaks, [s["memory"]["device_peak"] for s in steps[m["first_step"]:m["last_step"] + 1]])
        c = Child(script, args=["oom"])
        code, _, _ = c.finish(timeout=180)
        self.assertEqual(code, 1)
        err = next(m for m in c.messages if m["type"] == "error")
        self.assertTrue(err["message"].startswith("torch.OutOfMemoryError: CUDA out of memory"), err["message"])
        self.assertEqual(err["after_step"], 2)
        mem = err["memory"]
        self.assertGreaterEqual(mem["device_ooms"], 1)
        self.assertEqual(mem["device_total"], total)
        self.assertGreaterEqual(mem["device_peak"], mem["device_allocated"] + 256 * MIB)  # step 3's own peak
        after = [m for m in c.messages[c.messages.index(err):] if m["type"] == "step"]
        self.assertEqual([m["i"] for m in after], [3])  # the iteration that failed had trained: still a step

    # --- the reader, in this process -----------------------------------------------------------------------
    def reader(self):
        from tunebench import memory, state
        return memory.StepMemory(state.Run(None, None))

    def test_the_cpu_path_reads_the_resident_set_cheaply_and_calls_no_cuda(self):
        import torch
        from tunebench import memory
        vm = vm_rss()
        reader = self.reader()
        mem = reader.read()
        self.assertLess(abs(mem["host_rss"] - vm), 4 * MIB, (mem, vm))
        self.assertEqual(json.loads(memory.to_json(mem)), mem)
        if torch.cuda.is_available():
            return
        self.assertEqual(set(mem), {"host_rss"})
        self.assertFalse(torch.cuda.is_initialized())
        # Cheap: no file opened a step (the statm file is opened once, then read again; opening it each time cost
        # 16 µs against 2.5) and no CUDA call. What a read costs: bench/bench_step_accounting.py.
        refused = AssertionError("a step's read opened a file")
        with mock.patch("os.open", side_effect=refused), mock.patch("builtins.open", side_effect=refused):
            for _ in range(100):
                self.assertLess(abs(reader.read()["host_rss"] - vm), 64 * MIB)
        self.assertFalse(torch.cuda.is_initialized())

    def test_a_forked_child_reads_its_own_resident_set(self):
        # A DataLoader worker is such a child. Its resident set is not its parent's: the shared library pages
        # it has not touched are not in it, and here it also touches 96 MiB of its own.
        reader = self.reader()
        reader.read()  # opens /proc/self/statm, which the fork inherits
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                ballast = bytearray(96 * MIB)
                for k in range(0, len(ballast), 4096):
                    ballast[k] = 1
                os.write(w, json.dumps([reader.read()["host_rss"], vm_rss()]).encode())
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r) as f:
            child, child_vm = json.loads(f.read())
        os.waitpid(pid, 0)
        parent, parent_vm = reader.read()["host_rss"], vm_rss()
        self.assertGreater(abs(child_vm - parent_vm), 32 * MIB)  # the two differ: the test can tell them apart
        self.assertLess(abs(child - child_vm), 4 * MIB, (child, child_vm, parent_vm))
        self.assertLess(abs(parent - parent_vm), 4 * MIB)
