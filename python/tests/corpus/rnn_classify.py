"""A sequence classifier the way the RNN tutorials write it: token sequences in a TensorDataset and a DataLoader
(batch first: (batch, time)), an embedding, an LSTM with batch_first=True, the last hidden state classified;
Adam, clip_grad_norm_ before the step, a StepLR per epoch, validation under no_grad."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class SeqClassifier(nn.Module):
    def __init__(self, vocab, emb, hidden, classes):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=1, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        out, (h, c) = self.lstm(self.embedding(x))
        return self.fc(h[-1])


def make_data(n, seq_len, vocab, generator):
    """Label: which of tokens 1 and 2 the sequence holds more of."""
    x = torch.randint(0, vocab, (n, seq_len), generator=generator)
    y = ((x == 1).sum(1) > (x == 2).sum(1)).long()
    return TensorDataset(x, y)


def main():
    parser = argparse.ArgumentParser(description="LSTM sequence classifier")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=12)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--clip", type=float, default=1.0)
    args = parser.parse_args()
    torch.manual_seed(3)
    g = torch.Generator().manual_seed(3)
    train_set = make_data(160, args.seq_len, 10, g)
    val_set = make_data(64, args.seq_len, 10, g)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=32)
    model = SeqClassifier(10, 8, 16, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        model.train()
        for i, (seqs, labels) in enumerate(train_loader):
            optimizer.zero_grad()
            loss = criterion(model(seqs), labels)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            print(f"epoch {epoch} batch {i} loss {loss.item()!r}")
        scheduler.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for seqs, labels in val_loader:
                correct += (model(seqs).argmax(1) == labels).sum().item()
        print(f"epoch {epoch} val accuracy {correct / len(val_set)!r}")


if __name__ == "__main__":
    main()
