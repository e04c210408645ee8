"""A variational autoencoder on 28x28 images, the MNIST example's model and loss: a DataLoader over the images
(random here, as the test data is made at test time), Adam, the reconstruction term plus the KL term summed
per batch. Steps of 15-50 ms on a small CPU."""
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc21, self.fc22 = nn.Linear(784, 400), nn.Linear(400, 20), nn.Linear(400, 20)
        self.fc3, self.fc4 = nn.Linear(20, 400), nn.Linear(400, 784)
    def forward(self, x):
        h = F.relu(self.fc1(x.view(-1, 784)))
        mu, logvar = self.fc21(h), self.fc22(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z)))), mu, logvar
model = VAE()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loader = DataLoader(TensorDataset(torch.rand(2048, 1, 28, 28)), batch_size=128, shuffle=True)
for epoch in range(1000):
    for (x,) in loader:
        opt.zero_grad()
        recon, mu, logvar = model(x)
        loss = F.binary_cross_entropy(recon, x.view(-1, 784), reduction="sum")
        (loss - 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())).backward()
        opt.step()
