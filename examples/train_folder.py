"""An ordinary image-folder training script, written the way a newcomer writes one: PIL decoding in the
Dataset, a DataLoader with default arguments, loss.item() every step. Nothing here knows about TuneBench.

    python3 train_folder.py --data DIR [--epochs 1] [--batch-size 32] [--lr 1e-3]

DIR holds one sub-folder per class with JPEG/PNG images (tunebench-cli make-dataset writes one).
"""

import argparse
import os

import numpy as np
import torch
import torch.nn as nn
from PIL import Image
from torch.utils.data import DataLoader, Dataset


class ImageFolder(Dataset):
    def __init__(self, root, size=32):
        self.classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
        self.items = []
        for label, c in enumerate(self.classes):
            for name in sorted(os.listdir(os.path.join(root, c))):
                if name.lower().endswith((".jpg", ".jpeg", ".png")):
                    self.items.append((os.path.join(root, c, name), label))
        self.size = size

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, label = self.items[i]
        img = Image.open(path).convert("RGB")
        # Random crop of 3/4 of the shorter side, resized: the usual augmentation, at full decode size.
        w, h = img.size
        s = int(min(w, h) * 0.75)
        x0 = np.random.randint(0, w - s + 1)
        y0 = np.random.randint(0, h - s + 1)
        img = img.crop((x0, y0, x0 + s, y0 + s)).resize((self.size, self.size), Image.BILINEAR)
        if np.random.rand() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
        x = (x - 0.5) / 0.25
        return x, label


class Net(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, classes))

    def forward(self, x):
        return self.head(self.features(x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    args = p.parse_args()
    torch.manual_seed(0)
    ds = ImageFolder(args.data)
    loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Net(len(ds.classes)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()
    step = 0
    for epoch in range(args.epochs):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            opt.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            opt.step()
            if step % 10 == 0:
                print("epoch %d step %d loss %.4f" % (epoch, step, loss.item()))
            step += 1
    print("done: %d steps" % step)


if __name__ == "__main__":
    main()
