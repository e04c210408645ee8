"""Actor-critic without a DataLoader: each episode is rolled out in a small synthetic environment, then the
actor's and the critic's optimizers step (SequentialLR warm-up then decay on the actor)."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class LineWorld:
    """Walk on a line; reward for getting close to the goal at 0."""

    def __init__(self, gen, length=12):
        self.gen = gen
        self.length = length

    def reset(self):
        self.pos = float(torch.randint(-4, 5, (1,), generator=self.gen).item())
        self.t = 0
        return self._obs()

    def _obs(self):
        return torch.tensor([self.pos / 4.0, self.t / self.length])

    def step(self, action):
        self.pos += (-1.0, 0.0, 1.0)[action]
        self.t += 1
        reward = -abs(self.pos) / 4.0
        return self._obs(), reward, self.t >= self.length


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 3))

    def forward(self, obs):
        return F.softmax(self.body(obs), dim=-1)


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, obs):
        return self.body(obs).squeeze(-1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--episodes", type=int, default=12)
    p.add_argument("--gamma", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=543)
    args = p.parse_args()
    torch.manual_seed(args.seed)
    env = LineWorld(torch.Generator().manual_seed(args.seed))
    actor, critic = Actor(), Critic()
    actor_opt = torch.optim.Adam(actor.parameters(), lr=1e-2)
    critic_opt = torch.optim.RMSprop(critic.parameters(), lr=5e-3)
    warmup = torch.optim.lr_scheduler.LinearLR(actor_opt, start_factor=0.25, total_iters=4)
    decay = torch.optim.lr_scheduler.ExponentialLR(actor_opt, gamma=0.95)
    actor_sched = torch.optim.lr_scheduler.SequentialLR(actor_opt, [warmup, decay], milestones=[4])
    for episode in range(args.episodes):
        obs, done = env.reset(), False
        log_probs, values, rewards = [], [], []
        while not done:
            probs = actor(obs)
            dist = torch.distributions.Categorical(probs)
            action = dist.sample()
            log_probs.append(dist.log_prob(action))
            values.append(critic(obs))
            obs, reward, done = env.step(action.item())
            rewards.append(reward)
        returns, g = [], 0.0
        for r in reversed(rewards):
            g = r + args.gamma * g
            returns.insert(0, g)
        returns = torch.tensor(returns)
        values = torch.stack(values)
        advantage = returns - values.detach()
        actor_loss = -(torch.stack(log_probs) * advantage).sum()
        critic_loss = F.smooth_l1_loss(values, returns)
        actor_opt.zero_grad()
        actor_loss.backward()
        actor_opt.step()
        critic_opt.zero_grad()
        critic_loss.backward()
        critic_opt.step()
        actor_sched.step()
        print(f"episode {episode} return {returns[0].item()!r} actor {actor_loss.item()!r} "
              f"critic {critic_loss.item()!r}")


if __name__ == "__main__":
    main()
