"""launch.py --source FILE COPY: the patched copy runs as the original file, at its path (the tuner's check
that the patch it wrote makes the plain script faster). The script is shaped as people write one: a helper
module beside it, data found through __file__, a model saved whole with torch.save."""

import importlib.util
import marshal
import os
import pickletools
import tempfile
import textwrap
import unittest
import zipfile

from tests.launch_util import Child

MAIN = textwrap.dedent('''
    import os
    import sys

    import torch
    from torch.utils.data import DataLoader, TensorDataset

    import helper
    from helper import make_model, WIDTH

    here = os.path.dirname(os.path.abspath(__file__))
    data = torch.load(os.path.join(here, "data.pt"))
    loader = DataLoader(TensorDataset(data, data.sum(1, keepdim=True)), batch_size=8)
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    torch.save(model, os.path.join(here, "model.pt"))
    print("MAIN", "original", "workers", loader.num_workers, "width", WIDTH, "helper", getattr(helper, "PATCHED", False),
          "file", __file__, flush=True)
''')

HELPER = textwrap.dedent('''
    import torch

    WIDTH = 4


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(WIDTH, 1)

        def forward(self, x):
            return self.fc(x)


    def make_model():
        return Net()
''')


class PatchedSource(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = os.path.join(self.tmp.name, "proj")
        self.copies = os.path.join(self.tmp.name, "copies")
        os.makedirs(self.dir)
        os.makedirs(self.copies)
        self.main = os.path.join(self.dir, "train.py")
        self.helper = os.path.join(self.dir, "helper.py")
        with open(self.main, "w") as f:
            f.write(MAIN)
        with open(self.helper, "w") as f:
            f.write(HELPER)
        import torch
        torch.save(torch.randn(32, 4), os.path.join(self.dir, "data.pt"))

    def tearDown(self):
        self.tmp.cleanup()

    def run_launcher(self, sources):
        args = []
        for original, copy in sources:
            args += ["--source", original, copy]
        # Python writes bytecode caches, as on a user's machine (not when PYTHONDONTWRITEBYTECODE is set).
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        c = Child(self.main, launcher_args=args, cwd=self.tmp.name, env=env)
        rc, out, err = c.finish(120)
        return rc, out, err, c.messages

    def copy_of(self, path, text):
        copy = os.path.join(self.copies, os.path.basename(path))
        with open(copy, "w") as f:
            f.write(text)
        return copy

    def test_the_copies_run_as_the_originals(self):
        # A run of the original first leaves a bytecode cache of helper.py that must not be used for its copy.
        rc, out, err, _ = self.run_launcher([])
        self.assertEqual(rc, 0, err)
        self.assertIn("MAIN original workers 0 width 4 helper False file " + self.main, out)
        main = self.copy_of(self.main, MAIN.replace("batch_size=8)", "batch_size=8, num_workers=1)")
                            .replace('"original"', '"patched"'))
        helper = self.copy_of(self.helper, HELPER.replace("WIDTH = 4", "WIDTH = 4  # patched\nPATCHED = True"))
        rc, out, err, msgs = self.run_launcher([(self.main, main), (self.helper, helper)])
        self.assertEqual(rc, 0, err)
        # The copy ran, at the original's path: __file__, the data beside it, its sibling module (patched too).
        self.assertIn("MAIN patched workers 1 width 4 helper True file " + self.main, out)
        self.assertTrue(any(m.get("type") == "step" for m in msgs), msgs[-3:])
        # Nothing of the copy was left in the user's tree: the cached bytecode (the original run's) is still the
        # original's, what the next plain `import helper` there runs.
        with open(importlib.util.cache_from_source(self.helper), "rb") as f:
            code = marshal.loads(f.read()[16:])
        self.assertIn("WIDTH", code.co_names)
        self.assertNotIn("PATCHED", code.co_names)
        # The model saved whole loads where the original's classes live: its pickle names helper.Net.
        with zipfile.ZipFile(os.path.join(self.dir, "model.pt")) as z:
            pkl = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
        self.assertIn("helper Net", [arg for op, arg, _ in pickletools.genops(pkl) if op.name == "GLOBAL"])

    def test_a_missing_copy_is_an_error_not_the_original(self):
        rc, out, err, msgs = self.run_launcher([(self.main, os.path.join(self.copies, "gone.py"))])
        self.assertEqual(rc, 2, err)
        self.assertNotIn("MAIN", out)
        errors = [m["message"] for m in msgs if m.get("type") == "error"]
        self.assertTrue(errors and "the patched copy of " + self.main + " is missing" in errors[0], msgs)


if __name__ == "__main__":
    unittest.main()
