"""A tutorial-style CNN: Adam, StepLR, the whole model (not its state_dict) saved with torch.save every epoch,
the last checkpoint loaded back with torch.load at the end and evaluated. The script's stdout says nothing a
numerics knob (amp) changes: the same lines whatever the knobs, so a launched run is compared with a plain one.
Its lines tell what a checkpoint holds besides the model (hooks, compiled calls) and whether it loads."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def what_it_holds(model):
    """Hooks and compiled calls anywhere in the module tree: a plain model has none."""
    hooks = sum(len(d) for m in model.modules() for k, d in vars(m).items() if "hooks" in k and isinstance(d, dict))
    compiled = sum(1 for m in model.modules() if "_compiled_call_impl" in vars(m))
    return hooks, compiled


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--ckpt", default="ckpt.pt")
    args = parser.parse_args()
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(96, 1, 16, 16), torch.randint(0, 10, (96,)))
    loader = DataLoader(data, batch_size=16, shuffle=True)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    for epoch in range(1, args.epochs + 1):
        model.train()
        for i, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            print("epoch %d iter %d finite %s" % (epoch, i, bool(torch.isfinite(loss))))
        scheduler.step()
        torch.save(model, args.ckpt)
        print("epoch %d saved, lr %r" % (epoch, scheduler.get_last_lr()[0]))
    loaded = torch.load(args.ckpt, weights_only=False)
    loaded.eval()
    with torch.no_grad():
        out = loaded(torch.randn(4, 1, 16, 16))
    print("loaded %s: output %s %s, hooks and compiled calls %s" % (type(loaded).__name__, tuple(out.shape), out.dtype,
                                                                    what_it_holds(loaded)))


if __name__ == "__main__":
    main()
