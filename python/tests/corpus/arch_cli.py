"""A script that picks its model with -a/--arch from a set of choices, on a machine where a library logs an
error-looking line to stderr when it probes the device and again at exit (torch's C++ warning on a machine
without a GPU: `ERROR: ... DeviceProperties.cpp:48] gpuGetDeviceCount failed with code 35`). It fails on its
own either way: argparse refuses an unknown --arch, or its loss check raises once the learning rate is too
high. The script's error, not the log line after it, is what a parent must show."""
import argparse
import atexit
import math
import os

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

# What such a library writes: straight to fd 2 from C++, not through sys.stderr.
_DEVICE_LOG = b"ERROR: 1203 10:00:00.000000 12345 DeviceProperties.cpp:48] gpuGetDeviceCount failed with code 35\n"


def probe_devices():
    os.write(2, _DEVICE_LOG)
    atexit.register(os.write, 2, _DEVICE_LOG)  # its teardown logs it again
    return torch.cuda.is_available()


ARCHS = {
    "mlp": lambda: nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1)),
    "linear": lambda: nn.Linear(4, 1),
}


def main():
    use_cuda = probe_devices()
    parser = argparse.ArgumentParser(description="regression on random features")
    parser.add_argument("-a", "--arch", default="mlp", choices=sorted(ARCHS), help="model architecture")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    device = torch.device("cuda" if use_cuda else "cpu")
    torch.manual_seed(0)
    x = torch.randn(128, 4) * 10
    loader = DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=16)
    model = ARCHS[args.arch]().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        for i, (inputs, targets) in enumerate(loader):
            loss = nn.functional.mse_loss(model(inputs.to(device)), targets.to(device))
            if not math.isfinite(loss.item()):
                raise FloatingPointError(f"loss is {loss.item()} at epoch {epoch} iteration {i}")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"epoch {epoch} iter {i} loss {loss.item()!r}")


if __name__ == "__main__":
    main()
