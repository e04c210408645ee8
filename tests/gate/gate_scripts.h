// A training script as people write them (an MLP on a DataLoader, AdamW, a cosine schedule, gradient clipping,
// argparse, a checkpoint at the end), of a given hidden width: the gate's tests commit it at two widths.
// Test-only (tests/gate, tests/ui).
#pragma once

#include <string>

namespace tb::test_util {

inline std::string train_py(int width, const std::string& extra_line = "", const std::string& in_loop = "") {
  return R"(import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
)" + extra_line + R"(

def make_model(width):
    return nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    torch.manual_seed(0)
    x, y = torch.randn(8192, 64), torch.randint(0, 10, (8192,))
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True)
    model = make_model()" + std::to_string(width) + R"()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
    for epoch in range(args.epochs):
        for step, (xb, yb) in enumerate(loader):
)" + in_loop + R"(            opt.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        sched.step()
    if args.out:
        torch.save(model, args.out)


if __name__ == "__main__":
    main()
)";
}

}  // namespace tb::test_util
