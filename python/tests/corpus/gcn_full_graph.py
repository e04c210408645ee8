"""A graph convolutional network trained on the full graph: one optimizer step per epoch over every node (no
DataLoader), then the model is evaluated on the training and the validation nodes after every step
(model.eval() and torch.no_grad(), which take longer than the step itself). Sparse features and a sparse
normalized adjacency, as Cora's loader builds them; the graph is generated here (nodes of one class link
mostly to each other)."""
import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim import Adam


class GraphConv(nn.Module):
    def __init__(self, input_dim, output_dim, use_bias=False):
        super(GraphConv, self).__init__()
        self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = None
        if use_bias:
            self.bias = nn.Parameter(torch.Tensor(output_dim))
            nn.init.zeros_(self.bias)

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.spmm(adj_mat, support)
        if self.bias is not None:
            output = output + self.bias
        return output


class GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
        super(GCN, self).__init__()
        self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
        self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input_tensor, adj_mat):
        x = self.gc1(input_tensor, adj_mat)
        x = F.relu(x)
        x = self.dropout(x)
        x = self.gc2(x, adj_mat)
        return F.log_softmax(x, dim=1)


def make_graph(nodes, features, classes, rng):
    """Node features (bag of words, row-normalized, sparse), labels, and the renormalized adjacency
    D^-1/2 (A + I) D^-1/2 (sparse)."""
    labels = rng.integers(0, classes, nodes)
    words = (rng.random((nodes, features)) < 0.05) | (np.arange(features)[None, :] % classes == labels[:, None]) & \
        (rng.random((nodes, features)) < 0.3)
    feats = torch.FloatTensor(words.astype(np.float32))
    scale = 1 / feats.sum(dim=1)
    scale[scale == float('inf')] = 0
    feats = torch.diag(scale).to_sparse() @ feats
    edges = []
    for a in range(nodes):
        for b in rng.choice(nodes, 4, replace=False):
            if labels[a] == labels[b] or rng.random() < 0.2:
                edges.append([a, b])
    edges = np.array(edges, dtype=np.int64)
    adj = torch.sparse_coo_tensor(edges.T, torch.ones(len(edges)), (nodes, nodes))
    adj = torch.eye(nodes) + adj
    degree = torch.sqrt(1 / torch.sum(adj, dim=1))
    degree[degree == float('inf')] = 0
    degree = torch.diag(degree).to_sparse()
    adj = degree @ adj @ degree
    return feats.to_sparse(), torch.LongTensor(labels), adj.to_sparse()


def train_iter(epoch, model, optimizer, criterion, input, target, mask_train, mask_val, print_every=10):
    start_t = time.time()
    model.train()
    optimizer.zero_grad()
    output = model(*input)
    loss = criterion(output[mask_train], target[mask_train])
    loss.backward()
    optimizer.step()
    loss_train, acc_train = test(model, criterion, input, target, mask_train)
    loss_val, acc_val = test(model, criterion, input, target, mask_val)
    if epoch % print_every == 0:
        print(f'Epoch: {epoch:04d} loss_train: {loss_train!r} acc_train: {acc_train:.4f} loss_val: {loss_val!r} '
              f'acc_val: {acc_val:.4f}')
    return time.time() - start_t


def test(model, criterion, input, target, mask, repeats=3):
    """The metrics on `mask`, averaged over a few dropout-free passes (as a slower evaluation would be)."""
    model.eval()
    with torch.no_grad():
        for _ in range(repeats):
            output = model(*input)
        output, target = output[mask], target[mask]
        loss = criterion(output, target)
        acc = (output.argmax(dim=1) == target).float().sum() / len(target)
    return loss.item(), acc.item()


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='PyTorch Graph Convolutional Network')
    parser.add_argument('--epochs', type=int, default=6)
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--l2', type=float, default=5e-4)
    parser.add_argument('--dropout-p', type=float, default=0.5)
    parser.add_argument('--hidden-dim', type=int, default=16)
    parser.add_argument('--nodes', type=int, default=300)
    parser.add_argument('--val-every', type=int, default=1)
    parser.add_argument('--seed', type=int, default=42)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    features, labels, adj_mat = make_graph(args.nodes, 64, 5, np.random.default_rng(args.seed))
    idx = torch.randperm(len(labels))
    idx_test, idx_val, idx_train = idx[:60], idx[60:120], idx[120:]
    gcn = GCN(features.shape[1], args.hidden_dim, labels.max().item() + 1, True, args.dropout_p)
    optimizer = Adam(gcn.parameters(), lr=args.lr, weight_decay=args.l2)
    criterion = nn.NLLLoss()
    for epoch in range(args.epochs):
        train_iter(epoch + 1, gcn, optimizer, criterion, (features, adj_mat), labels, idx_train, idx_val,
                   args.val_every)
    loss_test, acc_test = test(gcn, criterion, (features, adj_mat), labels, idx_test)
    print(f'Test set results: loss {loss_test!r} accuracy {acc_test:.4f}')
