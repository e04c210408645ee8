"""The shape of the public ImageNet training example, for the GPU box: torchvision's ImageFolder and transforms,
a torchvision ResNet, a DataLoader with 4 workers and pinned memory, SGD with momentum and a StepLR, an
AverageMeter, `loss.item()` every step, a progress line every --print-freq steps, and `torch.save` of a
checkpoint dict each epoch. Nothing here knows about TuneBench: `tunebench-cli tune --script` tunes it as a user's
script (scripts/gpu-check.sh, stage scripttune).
"""
import argparse
import time

import torch
import torch.nn as nn
import torchvision.datasets as datasets
import torchvision.models as models
import torchvision.transforms as transforms


class AverageMeter:
    def __init__(self, name):
        self.name, self.sum, self.count, self.val = name, 0.0, 0, 0.0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n

    @property
    def avg(self):
        return self.sum / max(1, self.count)


def train(loader, model, criterion, optimizer, epoch, device, args):
    batch_time, data_time, losses = AverageMeter("Time"), AverageMeter("Data"), AverageMeter("Loss")
    model.train()
    end = time.time()
    for i, (images, target) in enumerate(loader):
        data_time.update(time.time() - end)
        images = images.to(device, non_blocking=True)
        target = target.to(device, non_blocking=True)
        output = model(images)
        loss = criterion(output, target)
        losses.update(loss.item(), images.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        batch_time.update(time.time() - end)
        end = time.time()
        if i % args.print_freq == 0:
            print(f"Epoch: [{epoch}][{i}/{len(loader)}] Time {batch_time.val:.3f} ({batch_time.avg:.3f}) "
                  f"Data {data_time.val:.3f} ({data_time.avg:.3f}) Loss {losses.val:.4e} ({losses.avg:.4e})",
                  flush=True)
        if args.steps and i + 1 >= args.steps:
            break


def main():
    p = argparse.ArgumentParser(description="ImageNet-style training")
    p.add_argument("data")
    p.add_argument("-a", "--arch", default="resnet50")
    p.add_argument("-j", "--workers", default=4, type=int)
    p.add_argument("--epochs", default=90, type=int)
    p.add_argument("-b", "--batch-size", default=64, type=int)
    p.add_argument("--lr", default=0.1, type=float)
    p.add_argument("--momentum", default=0.9, type=float)
    p.add_argument("--wd", "--weight-decay", default=1e-4, type=float, dest="weight_decay")
    p.add_argument("-p", "--print-freq", default=10, type=int)
    p.add_argument("--steps", default=0, type=int, help="stop each epoch after this many steps (0: the whole epoch)")
    p.add_argument("--size", default=224, type=int)
    p.add_argument("--checkpoint", default="checkpoint.pth.tar")
    args = p.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_dataset = datasets.ImageFolder(args.data, transforms.Compose([
        transforms.RandomResizedCrop(args.size), transforms.RandomHorizontalFlip(), transforms.ToTensor(), normalize]))
    model = models.__dict__[args.arch](num_classes=len(train_dataset.classes)).to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)
    train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=args.batch_size, shuffle=True,
                                               num_workers=args.workers, pin_memory=True)
    for epoch in range(args.epochs):
        train(train_loader, model, criterion, optimizer, epoch, device, args)
        scheduler.step()
        torch.save({"epoch": epoch + 1, "arch": args.arch, "state_dict": model.state_dict(),
                    "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, args.checkpoint)


if __name__ == "__main__":
    main()
