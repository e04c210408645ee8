"""Why the loader is slow (hooks/loader_parts.py): scripts written as people write them - an ImageFolder with
torchvision transforms (v1 and v2), a map-style Dataset reading its own files, an IterableDataset with a
worker_init_fn, workers forked and spawned, and none - run traced under the launcher with TUNEBENCH_LOADER_PARTS=on;
`done.summary.loader_parts` must name where each sample's time went, in the process that loaded it (in the
training process: test_loader_parts_main.py; in workers: here). A run costs
2-3 s here (torch, torchvision, an optimizer's torch._dynamo): runs that several tests read are made once
(shared_run). What the timing costs a sample, and what taking a batch from a worker costs: bench/
bench_loader_parts.py."""

import os
import threading
import textwrap
import unittest

from tests.launch_util import SharedRuns

# An ImageFolder with the ImageNet example's transforms and one made slow on purpose (a blur over a sleep: a
# transform whose cost is its own, whatever the machine's cores: 10 ms, where the others take well under one on
# a loaded machine too). sys.argv: the folder, the workers, the epochs.
FOLDER = textwrap.dedent('''
    import sys, time, torch
    from torchvision import datasets
    {imports}

    class SlowBlur(torch.nn.Module):
        def forward(self, img):
            time.sleep(0.01)
            return img

    tf = T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(), SlowBlur(), {to_tensor}
                    T.Normalize([0.5] * 3, [0.2] * 3)])
    ds = datasets.ImageFolder(sys.argv[1], tf)
    loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, num_workers=int(sys.argv[2]),
                                         {context})
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 32 * 32, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if __name__ == "__main__":
        for epoch in range(int(sys.argv[3])):
            for x, y in loader:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
''')

# A Dataset of small arrays held in memory: a sample of microseconds, the case the sampled timing is for.
FAST_ARRAYS = textwrap.dedent('''
    import sys, torch

    class Small(torch.utils.data.Dataset):
        def __init__(self):
            self.x = torch.randn(512, 64)
        def __len__(self):
            return 512
        def __getitem__(self, i):
            return self.x[i] * 2, i % 2

    loader = torch.utils.data.DataLoader(Small(), batch_size=16, shuffle=True, num_workers=int(sys.argv[2]))
    model = torch.nn.Linear(64, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
''')

# A Dataset reading its own .npy files, and a collate made slow (padding in Python, as a hand-written collate).
FILES_SLOW_COLLATE = textwrap.dedent('''
    import os, sys, time, numpy as np, torch

    class Arrays(torch.utils.data.Dataset):
        def __init__(self, root):
            self.paths = sorted(os.path.join(root, p) for p in os.listdir(root))
        def __len__(self):
            return len(self.paths)
        def __getitem__(self, i):
            x = torch.from_numpy(np.load(self.paths[i]))
            return x, i % 2

    def pad_collate(items):
        time.sleep(0.05)  # a batch padded item by item in Python
        xs, ys = zip(*items)
        return torch.stack(xs), torch.tensor(ys)

    loader = torch.utils.data.DataLoader(Arrays(sys.argv[1]), batch_size=8, collate_fn=pad_collate,
                                         num_workers=int(sys.argv[2]))
    model = torch.nn.Linear(64, 2)
    opt = torch.optim.Adam(model.parameters())
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x.float()), y).backward()
        opt.step()
''')

# An IterableDataset that splits its stream by worker in a worker_init_fn, as the PyTorch docs show.
ITERABLE = textwrap.dedent('''
    import math, sys, torch

    class Stream(torch.utils.data.IterableDataset):
        def __init__(self, start, end):
            self.start, self.end = start, end
        def __iter__(self):
            for i in range(self.start, self.end):
                yield torch.full((16,), float(i)), i % 2

    def split(worker_id):
        info = torch.utils.data.get_worker_info()
        ds = info.dataset
        per = int(math.ceil((ds.end - ds.start) / float(info.num_workers)))
        ds.start, ds.end = ds.start + worker_id * per, min(ds.start + (worker_id + 1) * per, ds.end)
        print("worker", worker_id, "takes", ds.start, ds.end, flush=True)

    loader = torch.utils.data.DataLoader(Stream(0, 64), batch_size=8, num_workers=2, worker_init_fn=split)
    model = torch.nn.Linear(16, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
''')


def per_sample_ms(proc):
    return {k: v["ns"] / 1e6 / max(1, proc["samples"]) for k, v in proc["parts"].items()}


class LoaderScripts(SharedRuns):
    """Runs the scripts above under the launcher (made once for the class) and reads their loader parts."""

    def assertWhere(self, proc, part, needle, script):
        """The part's line (hooks/loader_where.py) is the first line of `script` holding `needle`."""
        with open(script) as f:
            line = next(i + 1 for i, text in enumerate(f.read().splitlines()) if needle in text)
        path, _, at = proc["where"].get(part, "").rpartition(":")
        self.assertEqual((os.path.abspath(path), at), (os.path.abspath(script), str(line)),
                         "%s: %s" % (part, proc["where"]))

    def data(self, kind):
        """A folder of `kind` ("images": 32 JPEGs in two classes, else 32 .npy arrays), made once for the class."""
        root = os.path.join(self.shared_dir, kind)
        if os.path.isdir(root):
            return root
        if kind == "images":
            import numpy as np
            from PIL import Image
            rng = np.random.default_rng(0)
            for c in ("cat", "dog"):
                os.makedirs(os.path.join(root, c))
                for i in range(16):
                    img = Image.fromarray(rng.integers(0, 255, (48, 64, 3), dtype=np.uint8))
                    img.save(os.path.join(root, c, "%d.jpg" % i), quality=90)
        else:
            import numpy as np
            os.makedirs(root)
            for i in range(32):
                np.save(os.path.join(root, "%02d.npy" % i), np.random.rand(64).astype(np.float32))
        return root

    def launch(self, name, text, args, traced=True, env=None):
        """(done's summary, stdout) of `text` run as NAME.py under the launcher, once for the class; traced (the
        default way: the timing on) unless said, TUNEBENCH_LOADER_PARTS as `env` has it (default: this process's)."""
        launcher = ["--trace-dir", "{dir}/trace-" + name] if traced else []
        env = env or {k: v for k, v in os.environ.items() if k != "TUNEBENCH_LOADER_PARTS"}
        c = self.shared_run(name, text, args=args, launcher_args=launcher, env=env, timeout=300)
        code, out, err = c.result
        self.assertEqual(code, 0, err)
        self.messages = c.messages
        self.script = os.path.join(self.shared_dir, name + ".py")
        done = next(m for m in c.messages if m["type"] == "done")
        return done["summary"], out

    def folder(self, workers, v2=False, context="", epochs=2):
        """The FOLDER script's text and its arguments."""
        text = FOLDER.format(imports="from torchvision.transforms import v2 as T" if v2 else
                             "from torchvision import transforms as T",
                             to_tensor="T.ToImage(), T.ToDtype(torch.float32, scale=True)," if v2 else "T.ToTensor(),",
                             context=context)
        return text, [self.data("images"), str(workers), str(epochs)]


class InWorkers(LoaderScripts):
    """Loaded in DataLoader workers, forked and spawned: each worker's parts, in its own process. (Loaded in the
    training process: test_loader_parts_main.py.)"""

    def test_a_slow_transform_is_named_first_in_each_worker(self):
        text, args = self.folder(2)
        summary, _ = self.launch("folder_workers", text, args)
        procs = summary["loader_parts"]
        self.assertEqual(sorted(p["who"] for p in procs), ["worker 0", "worker 0", "worker 1", "worker 1"])  # 2 epochs
        self.assertFalse(any("receive" in p for p in procs), procs)  # its batches came from workers: no probe
        self.assertEqual(sum(p["samples"] for p in procs), 2 * 32)
        self.assertEqual(sum(p["batches"] for p in procs), 2 * 4)
        for p in procs:
            ms = per_sample_ms(p)
            self.assertEqual(max(ms, key=ms.get), "SlowBlur", ms)
            self.assertGreaterEqual(ms["SlowBlur"], 10.0, ms)
            for part in ("open (PIL)", "read + decode (PIL)", "RandomResizedCrop", "ToTensor", "Normalize",
                         "dataset code", "collate"):
                self.assertIn(part, ms)
            # The parts are exclusive: they add up to the process's busy time, never more.
            self.assertLessEqual(sum(v["ns"] for v in p["parts"].values()), p["busy_ns"])
            self.assertLessEqual(p["busy_ns"], p["life_ns"])
            # SlowBlur sleeps 10 ms of each sample: the thread's CPU time is well under its busy time.
            self.assertLess(p["cpu_ns"], p["busy_ns"] - 3e6 * p["samples"], p)
            # A worker's wait for a CPU (schedstat), apart from its sleeps: there, never more than its life. (How
            # much it is depends on what else runs: a measurement, not asserted.)
            if os.path.exists("/proc/self/task/%d/schedstat" % threading.get_native_id()):
                self.assertGreaterEqual(p["run_delay_ns"], 0, p)
                self.assertLessEqual(p["run_delay_ns"], p["life_ns"], p)
            # Each part's line: the script's own class where it is defined, a library's where the script uses it.
            self.assertWhere(p, "SlowBlur", "class SlowBlur", self.script)
            self.assertWhere(p, "RandomResizedCrop", "T.RandomResizedCrop(", self.script)
            self.assertWhere(p, "Normalize", "T.Normalize(", self.script)
            self.assertWhere(p, "dataset code", "datasets.ImageFolder(", self.script)
            self.assertWhere(p, "read + decode (PIL)", "datasets.ImageFolder(", self.script)
            self.assertWhere(p, "collate", "DataLoader(", self.script)

    def test_spawned_workers_report_too(self):
        text, args = self.folder(1, context='multiprocessing_context="spawn"', epochs=1)
        summary, _ = self.launch("folder_spawn", text, args)
        procs = summary["loader_parts"]
        self.assertEqual([p["who"] for p in procs], ["worker 0"])
        self.assertEqual(sum(p["samples"] for p in procs), 32)
        self.assertTrue(all("SlowBlur" in p["parts"] for p in procs), procs)
        for p in procs:  # a spawned worker imports the script again as __mp_main__: the same lines
            self.assertWhere(p, "SlowBlur", "class SlowBlur", self.script)
            self.assertWhere(p, "RandomResizedCrop", "T.RandomResizedCrop(", self.script)

    def test_an_iterable_dataset_keeps_its_worker_init_fn(self):
        summary, out = self.launch("iterable", ITERABLE, [])
        self.assertIn("worker 0 takes 0 32", out)
        self.assertIn("worker 1 takes 32 64", out)
        procs = summary["loader_parts"]
        self.assertEqual(sorted(p["who"] for p in procs), ["worker 0", "worker 1"])
        self.assertEqual(sum(p["batches"] for p in procs), 8)
        # Each item the stream yields is a sample, timed in the worker that made it (its generator's code).
        self.assertEqual(sum(p["samples"] for p in procs), 64)
        for p in procs:
            self.assertEqual(p["samples"], 32, p)
            self.assertIn("dataset code", p["parts"])
            self.assertWhere(p, "dataset code", "def __iter__", self.script)  # the generator's code

class ReceiveProbe(unittest.TestCase):
    """hooks/loader_receive.py on its own: a figure for a batch a worker can send, none for one it cannot."""

    def test_a_batch_goes_through_a_worker_and_its_taking_is_timed(self):
        import torch
        from tunebench.hooks import loader_receive
        small = loader_receive.measure((torch.zeros(8, 16), torch.arange(8)))
        self.assertIsNotNone(small)
        self.assertEqual(small["bytes"], 8 * 16 * 4 + 8 * 8)
        self.assertGreater(small["ns"], 0)
        # 64 MB of pages to map and touch (what that costs against the small batch: bench_loader_parts.py --receive).
        big = loader_receive.measure({"x": torch.ones(4, 4096, 1024), "y": [torch.arange(4)]})
        self.assertIsNotNone(big)
        self.assertEqual(big["bytes"], 4 * 4096 * 1024 * 4 + 4 * 8)
        self.assertGreater(big["ns"], 0)
        # A tokenizer's batch (a UserDict of tensors, as transformers' BatchEncoding) is measured by its tensors.
        from collections import UserDict
        words = loader_receive.measure(UserDict(input_ids=torch.zeros(8, 128, dtype=torch.long),
                                                attention_mask=torch.ones(8, 128, dtype=torch.long)))
        self.assertIsNotNone(words)
        self.assertEqual(words["bytes"], 2 * 8 * 128 * 8)

    def test_what_cannot_go_through_a_worker_gives_no_figure(self):
        import torch
        from tunebench.hooks import loader_receive
        self.assertIsNone(loader_receive.measure(None))
        self.assertIsNone(loader_receive.measure(["no tensor"]))
        self.assertIsNone(loader_receive.measure((torch.zeros(2), lambda: 0)))  # a lambda does not pickle
        keep = loader_receive.MAX_BYTES
        loader_receive.MAX_BYTES = 100
        try:
            self.assertIsNone(loader_receive.measure(torch.zeros(64)))  # 256 bytes: over the bound, not copied
        finally:
            loader_receive.MAX_BYTES = keep

    def test_only_the_first_loader_without_workers_is_kept(self):
        from tunebench.hooks import loader_receive

        class Loader:
            def __init__(self, workers):
                self.num_workers = workers
        train, val, workers = Loader(0), Loader(0), Loader(2)
        try:
            loader_receive.keep(workers, "w")
            self.assertIsNone(loader_receive._batch)
            loader_receive.keep(train, "a")
            loader_receive.keep(val, "v")
            loader_receive.keep(train, "b")
            self.assertEqual(loader_receive._batch, "b")
        finally:
            loader_receive.forget()


if __name__ == "__main__":
    unittest.main()
