"""Time-sequence prediction with LBFGS: two LSTMCells unrolled over the whole series in forward, the full
training set in every closure (LBFGS's default max_iter=20: up to 20 forward/backward passes inside one
optimizer.step), the closure defined inside the loop, and a no_grad prediction of the future after every
step. The data is generated here (sine waves with random phase), as the example's helper script does."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self, hidden):
        super(Sequence, self).__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--steps', type=int, default=4, help='steps to run')
    parser.add_argument('--series', type=int, default=11)
    parser.add_argument('--length', type=int, default=24)
    parser.add_argument('--hidden', type=int, default=8)
    opt = parser.parse_args()
    np.random.seed(2)
    torch.manual_seed(0)
    T = 20
    x = np.empty((opt.series, opt.length), 'int64')
    x[:] = np.array(range(opt.length)) + np.random.randint(-4 * T, 4 * T, opt.series).reshape(opt.series, 1)
    data = torch.from_numpy(np.sin(x / 1.0 / T).astype('float64'))
    input = data[3:, :-1]
    target = data[3:, 1:]
    test_input = data[:3, :-1]
    test_target = data[:3, 1:]
    seq = Sequence(opt.hidden).double()
    criterion = nn.MSELoss()
    # use LBFGS as optimizer since we can load the whole data to train
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8)
    # begin to train
    for i in range(opt.steps):
        print('STEP: ', i)

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print('loss:', repr(loss.item()))
            loss.backward()
            return loss
        optimizer.step(closure)
        # begin to predict, no need to track gradient here
        with torch.no_grad():
            future = 12
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            print('test loss:', repr(loss.item()))
            y = pred.detach().numpy()
        np.save('predict%d.npy' % i, y)
