"""ImageNet-example shape: train/validate functions, AverageMeter, StepLR, a checkpoint every epoch."""
import argparse
import os
import shutil

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class SmallConvNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n

    @property
    def avg(self):
        return self.sum / max(1, self.count)


def train(train_loader, model, criterion, optimizer, epoch, args):
    losses = AverageMeter()
    model.train()
    for i, (images, target) in enumerate(train_loader):
        output = model(images)
        loss = criterion(output, target)
        losses.update(loss.item(), images.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"Epoch: [{epoch}][{i}/{len(train_loader)}] loss {loss.item()!r}")
    return losses.avg


def validate(val_loader, model, criterion):
    losses, correct = AverageMeter(), 0
    model.eval()
    with torch.no_grad():
        for images, target in val_loader:
            output = model(images)
            losses.update(criterion(output, target).item(), images.size(0))
            correct += (output.argmax(1) == target).sum().item()
    acc = 100.0 * correct / len(val_loader.dataset)
    print(f" * Acc@1 {acc:.3f} loss {losses.avg!r}")
    return acc


def save_checkpoint(state, is_best, out_dir):
    path = os.path.join(out_dir, "checkpoint.pth.tar")
    torch.save(state, path)
    if is_best:
        shutil.copyfile(path, os.path.join(out_dir, "model_best.pth.tar"))


def main():
    parser = argparse.ArgumentParser(description="PyTorch ImageNet-style training")
    parser.add_argument("--epochs", default=3, type=int)
    parser.add_argument("-b", "--batch-size", default=16, type=int)
    parser.add_argument("--lr", default=0.1, type=float)
    parser.add_argument("--out", default=".")
    parser.add_argument("--seed", default=0, type=int)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    train_set = TensorDataset(torch.randn(128, 3, 16, 16), torch.randint(0, 10, (128,)))
    val_set = TensorDataset(torch.randn(1024, 3, 16, 16), torch.randint(0, 10, (1024,)))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=128, shuffle=False)

    model = SmallConvNet()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)

    best_acc1 = 0
    for epoch in range(args.epochs):
        train(train_loader, model, criterion, optimizer, epoch, args)
        acc1 = validate(val_loader, model, criterion)
        scheduler.step()
        is_best = acc1 > best_acc1
        best_acc1 = max(acc1, best_acc1)
        save_checkpoint({"epoch": epoch + 1, "state_dict": model.state_dict(), "best_acc1": best_acc1,
                         "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()},
                        is_best, args.out)
        print(f"lr {scheduler.get_last_lr()[0]!r}")


if __name__ == "__main__":
    main()
