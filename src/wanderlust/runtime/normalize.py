"""Running statistics used by PPO and the novelty modules.

All of them are stateful and expose ``state_dict()``/``load_state_dict()`` so that resume is exact.
"""

from __future__ import annotations

import numpy as np
import torch


class RunningMeanStd:
    """Running mean and variance over a batch axis (parallel algorithm of Chan et al.).

    ``shape`` is the shape of one sample; ``update(x)`` takes ``x`` of shape ``[B, *shape]``.
    Statistics are kept in float64 torch tensors.
    """

    def __init__(self, shape: tuple[int, ...] = (), epsilon: float = 1e-4) -> None:
        self.mean = torch.zeros(shape, dtype=torch.float64)
        self.var = torch.ones(shape, dtype=torch.float64)
        self.count = float(epsilon)

    def update(self, x: torch.Tensor | np.ndarray) -> None:
        x = torch.as_tensor(x).to(torch.float64)
        batch_mean = x.mean(dim=0)
        batch_var = x.var(dim=0, unbiased=False)
        self.update_from_moments(batch_mean, batch_var, x.shape[0])

    def update_from_moments(self, batch_mean: torch.Tensor, batch_var: torch.Tensor, batch_count: int) -> None:
        self.mean, self.var, self.count = combine_moments(
            self.mean, self.var, self.count, batch_mean, batch_var, float(batch_count)
        )

    @property
    def std(self) -> torch.Tensor:
        return torch.sqrt(self.var)

    def state_dict(self) -> dict:
        return {"mean": self.mean.clone(), "var": self.var.clone(), "count": self.count}

    def load_state_dict(self, state: dict) -> None:
        self.mean = torch.as_tensor(state["mean"], dtype=torch.float64).clone()
        self.var = torch.as_tensor(state["var"], dtype=torch.float64).clone()
        self.count = float(state["count"])


def combine_moments(
    mean: torch.Tensor, var: torch.Tensor, count: float,
    batch_mean: torch.Tensor, batch_var: torch.Tensor, batch_count: float,
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Merge two (mean, population variance, count) summaries into one."""
    delta = batch_mean - mean
    total = count + batch_count
    new_mean = mean + delta * batch_count / total
    m2 = var * count + batch_var * batch_count + delta.pow(2) * count * batch_count / total
    return new_mean, m2 / total, total


class DiscountedReturnNormalizer:
    """Scales rewards by the running std of their discounted return (as in RND, Burda et al. 2018).

    ``normalize(rewards)`` takes a rollout ``[T, N]`` in time order; the per-env running return
    is carried across rollouts and never reset at episode ends (intrinsic rewards are treated as
    non-episodic).
    """

    def __init__(self, num_envs: int, gamma: float) -> None:
        self.gamma = gamma
        self.running_return = torch.zeros(num_envs, dtype=torch.float64)
        self.stats = RunningMeanStd(())

    def normalize(self, rewards: torch.Tensor) -> torch.Tensor:
        """``rewards [T, N]`` divided by the running std of their discounted return, on their device
        (the running state stays on the CPU, where it is checkpointed)."""
        on_cpu = rewards.detach().to("cpu", torch.float64)
        returns = torch.empty_like(on_cpu)
        for t in range(on_cpu.shape[0]):
            self.running_return = self.running_return * self.gamma + on_cpu[t]
            returns[t] = self.running_return
        self.stats.update(returns.reshape(-1))
        return rewards / (self.stats.std.to(device=rewards.device, dtype=rewards.dtype) + 1e-8)

    def state_dict(self) -> dict:
        return {"running_return": self.running_return.clone(), "stats": self.stats.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.running_return = torch.as_tensor(state["running_return"], dtype=torch.float64).clone()
        self.stats.load_state_dict(state["stats"])
