"""TuneBench's Python side: run a user's unmodified PyTorch training script under hooks.

`python -m tunebench.launch [options] SCRIPT [ARGS...]` installs the hooks (DataLoader iteration, the model's
forward and backward, optimizer steps, torch.save, global backend switches) and runs SCRIPT as `__main__`,
speaking the run protocol of docs/protocol.md to the parent (tunebench-cli) on two file descriptors. A step
is one training iteration, told apart from validation and checkpoints by iterations.py.

Modules: launch (the process and the protocol's messages), iterations (the step rule), the hooks/ subpackage
(the events: DataLoader, forward and backward, optimizer, save; what the model knobs change), knobs (the
catalog), the trace/ subpackage (torch.profiler chunks), watchdog (a script that stops making steps), protocol,
state, source.
"""

__version__ = "0.1.0"
