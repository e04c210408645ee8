"""The benches' image folders: made once by `tunebench-cli make-dataset` into the temp directory and kept
between runs (a folder per tag, count and size, so a bench never measures another's images)."""

import os
import subprocess
import tempfile


def cached_dataset(cli, tag, images, size, classes=10):
    data = os.path.join(tempfile.gettempdir(), "tunebench-bench-%s-%d-%s" % (tag, images, size))
    if not os.path.isdir(data):
        subprocess.run([cli, "make-dataset", "--out", data, "--images", str(images), "--size", size,
                        "--classes", str(classes)], check=True, stdout=subprocess.DEVNULL)
    return data
