"""TuneBench's Python side: run a user's unmodified PyTorch training script under hooks.

`python -m tunebench.launch [options] SCRIPT [ARGS...]` installs the hooks (optimizer steps, DataLoader
iteration, global backend switches, the model's forward) and runs SCRIPT as `__main__`, speaking the run
protocol of docs/protocol.md to the parent (tunebench-cli) on two file descriptors.
"""

__version__ = "0.1.0"
