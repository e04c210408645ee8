"""Why the loader is slow, loaded in the training process (no workers): transforms v2 and what taking a batch from
a worker would cost, a slow collate told apart from a slow __getitem__, short samples timed one in K, and the timing
on only while traced unless switched off. The scripts, and loaded in workers: test_loader_parts.py."""

import os
import unittest

from tests.test_loader_parts import FAST_ARRAYS, FILES_SLOW_COLLATE, LoaderScripts, per_sample_ms


class InTheTrainingProcess(LoaderScripts):
    def main_process_folder(self):
        """The folder through transforms v2, loaded in the main process: (its one process's figures, the run's
        messages)."""
        text, args = self.folder(0, v2=True)
        summary, _ = self.launch("folder_v2", text, args)
        (main,) = summary["loader_parts"]
        return main, self.messages

    def test_transforms_v2_in_the_main_process(self):
        main, messages = self.main_process_folder()
        self.assertEqual(main["who"], "main")
        self.assertEqual(main["samples"], 64)
        ms = per_sample_ms(main)
        self.assertEqual(max(ms, key=ms.get), "SlowBlur", ms)
        for part in ("RandomResizedCrop", "ToImage", "ToDtype", "Normalize"):
            self.assertIn(part, ms)
        # Loaded here: what taking each batch from a worker would cost this process, probed at the run's end on
        # its last batch (8 images of 3x32x32 float32 and 8 int64 labels) through one forked worker.
        receive = main["receive"]
        self.assertEqual(receive["bytes"], 8 * 3 * 32 * 32 * 4 + 8 * 8, receive)
        self.assertEqual(receive["batches"], 16, receive)
        self.assertGreater(receive["ns"], 0, receive)  # measured (how long: bench_loader_parts.py --receive)
        # The probe's loader is not the script's: one loader said, its knobs the script's.
        said = [m for m in messages if m["type"] == "source" and m.get("kind") == "dataloader"]
        self.assertEqual(len(said), 1, said)

    def collate_run(self, traced=True, switch=None):
        """FILES_SLOW_COLLATE's summary: traced or not, TUNEBENCH_LOADER_PARTS left as it is by default or set."""
        env = {k: v for k, v in os.environ.items() if k != "TUNEBENCH_LOADER_PARTS"}
        if switch:
            env["TUNEBENCH_LOADER_PARTS"] = switch
        name = "collate_%s_%s" % ("traced" if traced else "untraced", switch or "default")
        return self.launch(name, FILES_SLOW_COLLATE, [self.data("arrays"), "0"], traced=traced, env=env)[0]

    def test_a_slow_collate_is_told_apart_from_a_slow_getitem(self):
        (main,) = self.collate_run()["loader_parts"]
        self.assertEqual((main["samples"], main["batches"]), (32, 4))
        collate_ms = main["parts"]["collate"]["ns"] / 1e6 / main["batches"]
        getitem_ms = main["parts"]["dataset code"]["ns"] / 1e6 / main["samples"]
        self.assertGreaterEqual(collate_ms, 50.0)
        self.assertLess(getitem_ms * 8, collate_ms / 2, main)  # a batch's reads: under half its collate
        self.assertWhere(main, "collate", "def pad_collate", self.script)
        self.assertWhere(main, "dataset code", "def __getitem__", self.script)

    def test_on_while_traced_unless_switched_off(self):
        self.assertNotIn("loader_parts", self.collate_run(traced=False, switch="on"))  # only while traced
        self.assertIn("loader_parts", self.collate_run())  # traced: on by default
        self.assertNotIn("loader_parts", self.collate_run(switch="off"))

    def test_short_samples_are_timed_one_in_k_and_stand_for_the_rest(self):
        """A sample of microseconds (a .npy array) is timed one in K; the totals are scaled to every sample: the
        calls of each part are the samples', the busy time what the timed ones measured times the samples."""
        summary, _ = self.launch("fast_arrays", FAST_ARRAYS, [self.data("arrays"), "0"])
        main = summary["loader_parts"][0]
        self.assertEqual(main["who"], "main")
        self.assertGreater(main["samples"], 100)
        self.assertLess(main["timed_samples"], main["samples"] // 2, main)
        self.assertGreater(main["timed_samples"], 5, main)
        own = main["parts"]["dataset code"]
        self.assertAlmostEqual(own["calls"], main["samples"], delta=main["samples"] * 0.02 + 1)
        self.assertGreater(main["busy_ns"], 0)
        # A slow sample (the folder's 10 ms transform) is timed far more often: K is the timing's cost (~50 us
        # for 8 parts) against a quarter of a percent of the sample, at most one in two here.
        main, _ = self.main_process_folder()
        self.assertGreaterEqual(main["timed_samples"] * 3 + 3, main["samples"], main)


if __name__ == "__main__":
    unittest.main()
