"""The loader on the timeline (hooks/loader_lanes.py, hooks/loader_pin.py): a traced script's DataLoader, as
people write it (an ImageFolder through torchvision transforms, one of them slow on purpose, two workers,
pin_memory), must leave, beside its trace chunks, files of lanes: every sample each worker loaded while a chunk
recorded, on that worker's own process, with the sample's parts inside it, each batch's collate, the pin-memory
thread's pins, and the training loop's queue of batches as counters; on the monotonic clock, with the offset
the chunks state to put them on theirs."""

import json
import os
import textwrap
import time
import unittest

from tests.launch_util import Child, ScriptTest

SCRIPT = textwrap.dedent('''
    import os, sys, time, torch
    from torchvision import datasets, transforms as T

    class SlowBlur(torch.nn.Module):
        def forward(self, img):
            time.sleep(0.004)
            return img

    tf = T.Compose([T.RandomResizedCrop(32), SlowBlur(), T.ToTensor()])
    ds = datasets.ImageFolder(sys.argv[1], tf)
    loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, num_workers=2, pin_memory=True)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 32 * 32, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    print("main pid", os.getpid(), flush=True)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
''')


class LoaderLanes(ScriptTest):
    def images(self):
        import numpy as np
        from PIL import Image
        root = os.path.join(self.dir.name, "images")
        rng = np.random.default_rng(0)
        for c in ("cat", "dog"):
            os.makedirs(os.path.join(root, c))
            for i in range(16):
                Image.fromarray(rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)).save(
                    os.path.join(root, c, "%d.jpg" % i), quality=90)
        return root

    def test_workers_samples_and_queue_are_lanes_beside_the_chunks(self):
        with open(self.script, "w") as f:
            f.write(SCRIPT)
        trace_dir = os.path.join(self.dir.name, "trace")
        c = Child(self.script, args=[self.images()], env=dict(os.environ, TUNEBENCH_LOADER_PARTS="on"),
                  launcher_args=["--trace-dir", trace_dir, "--trace-share", "0", "--trace-every", "4"])
        code, out, err = c.finish(timeout=300)
        self.assertEqual(code, 0, err)
        main_pid = int(out.split("main pid ")[1].split()[0])
        chunks = [m for m in c.messages if m["type"] == "trace"]
        lanes = [m for m in c.messages if m["type"] == "trace_lanes"]
        self.assertGreaterEqual(len(chunks), 2, chunks)
        self.assertGreaterEqual(len(lanes), 1, [m["type"] for m in c.messages])
        # The chunks say their clock's offset to the monotonic one (the same for all but the marker's own jitter,
        # which bench_loader_parts.py prints).
        for m in chunks:
            with open(m["path"]) as f:
                float(json.load(f)["tunebench_clock_offset_us"])
        events = []
        for m in lanes:
            with open(m["path"]) as f:
                doc = json.load(f)
            self.assertEqual(doc["tunebench_clock"], "monotonic")
            events += doc["traceEvents"]
        names = {(e["pid"], e["args"]["name"]) for e in events if e.get("name") == "process_name"}
        workers = {pid for pid, name in names if name.startswith("DataLoader worker ")}
        # Two workers a pass (not persistent: each pass starts its own), each its own process.
        self.assertEqual({name for _, name in names}, {"DataLoader worker 0", "DataLoader worker 1"})
        self.assertGreaterEqual(len(workers), 2, names)
        self.assertNotIn(main_pid, workers)
        spans = [e for e in events if e.get("ph") == "X"]
        samples = [e for e in spans if e["name"] == "sample"]
        self.assertTrue(samples, spans[:5])
        self.assertEqual({e["pid"] for e in samples}, workers)
        # A sample holds its parts: the slow transform (its 4 ms sleep) inside a sample of its worker.
        blurs = [e for e in spans if e["name"] == "SlowBlur"]
        self.assertTrue(blurs)
        for b in blurs[:20]:
            self.assertGreaterEqual(b["dur"], 3900, b)
            self.assertTrue(any(s["pid"] == b["pid"] and s["ts"] <= b["ts"] and b["ts"] + b["dur"] <= s["ts"] + s["dur"] + 0.01
                                for s in samples), b)
        self.assertTrue(any(e["name"] == "collate" and e["pid"] in workers for e in spans))
        # The pins, on the training process's pin-memory thread (torch pins only with an accelerator); the
        # queue, as its counters.
        import torch
        pins = [e for e in spans if e["name"] == "pin memory"]
        if torch.accelerator.is_available():
            self.assertTrue(pins, {e["name"] for e in spans})
            self.assertEqual({e["pid"] for e in pins}, {main_pid})
        else:
            self.assertFalse(pins)
        counters = {e["name"] for e in events if e.get("ph") == "C" and e["pid"] == main_pid}
        self.assertEqual(counters, {"loader: batches ready", "loader: batches in flight"})
        # On the monotonic clock: within the run's time (µs).
        now_us = time.monotonic_ns() / 1000
        for e in spans:
            self.assertLess(now_us - e["ts"], 600e6, e)
        # Recorded only while a chunk recorded: never more samples than the run loaded (2 passes of 32).
        self.assertLessEqual(len(samples), 64)
        if torch.accelerator.is_available():  # the pins are in the loader report too
            done = next(m for m in c.messages if m["type"] == "done")
            main = [p for p in done["summary"]["loader_parts"] if p["who"] == "main"]
            self.assertEqual(len(main), 1, done["summary"]["loader_parts"])
            self.assertGreaterEqual(main[0]["pin_memory"]["calls"], 8, main[0])  # a pin a batch: 2 passes of 4

    def test_a_pin_is_one_batch_however_deep_the_batch(self):
        """hooks/loader_pin.py on torch's own pin_memory name (no accelerator here: torch's function stood in for by
        one that recurses the same way, through the module's name): one call a batch, its time, and an event on
        the pin thread's lane only while a chunk records."""
        from torch.utils.data._utils import pin_memory as module
        from tunebench.hooks import loader_lanes, loader_pin

        def fake(data, device=None):
            if isinstance(data, (list, tuple)):
                return type(data)(module.pin_memory(d, device) for d in data)
            time.sleep(0.001)
            return data

        saved = (module.pin_memory, loader_pin._orig, loader_pin._pins)
        module.pin_memory, loader_pin._orig, loader_pin._pins = fake, None, None
        try:
            loader_lanes.create(self.dir.name)
            loader_pin.install()
            self.assertEqual(module.pin_memory([1, (2, 3)]), [1, (2, 3)])
            self.assertEqual(loader_pin.totals()["calls"], 1)
            self.assertGreaterEqual(loader_pin.totals()["ns"], 3_000_000)
            self.assertFalse(loader_pin._pins.events)
            loader_lanes.set_recording(True)
            module.pin_memory((4, 5))
            loader_lanes.set_recording(False)
            self.assertEqual(loader_pin.totals()["calls"], 2)
            groups, _ = loader_lanes.take()
            events = [e for g in groups for e in g["events"]]
            self.assertEqual([e[0] for e in events], ["pin memory"])
            self.assertEqual(groups[0]["tid"], loader_lanes.PIN_TID)
        finally:
            module.pin_memory, loader_pin._orig, loader_pin._pins = saved
            loader_lanes.set_recording(False)
            loader_lanes._flag = loader_lanes._dir = None


if __name__ == "__main__":
    unittest.main()
