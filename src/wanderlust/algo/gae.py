"""Generalized Advantage Estimation (Schulman et al. 2016), CleanRL-style backward loop.

Shapes: ``T`` rollout steps, ``N`` envs.
"""

from __future__ import annotations

import torch


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    episode_ends: torch.Tensor,
    last_value: torch.Tensor,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and returns ``([T, N], [T, N])`` of one rollout.

    Args:
        rewards: ``[T, N]`` reward of transition ``t`` (for a truncated episode the trainer has
            already added ``gamma * V(final_obs)`` to the last reward).
        values: ``[T, N]`` ``V(s_t)`` from the rollout.
        episode_ends: ``[T, N]`` bool, True when transition ``t`` ended its episode (terminated or
            truncated): nothing after it is bootstrapped and the lambda-trace is cut there. Pass all
            False for a stream that ignores episodes (the intrinsic one, as in RND).
        last_value: ``[N]`` ``V(s_T)``, the value of the observation after the rollout.
        gamma: discount in (0, 1].
        lam: GAE lambda in [0, 1]; 0 gives the one-step TD error, 1 the Monte-Carlo return minus value.

    Returns:
        ``advantages [T, N]`` and ``returns = advantages + values`` ``[T, N]``, float32.

    ``delta_t = r_t + gamma * V(s_{t+1}) * (1 - end_t) - V(s_t)`` and
    ``A_t = delta_t + gamma * lam * (1 - end_t) * A_{t+1}``.
    """
    if rewards.dim() != 2 or values.shape != rewards.shape or episode_ends.shape != rewards.shape:
        raise ValueError(
            "compute_gae needs rewards, values and episode_ends of the same shape [T, N], got "
            f"{list(rewards.shape)}, {list(values.shape)}, {list(episode_ends.shape)}"
        )
    if last_value.shape != rewards.shape[1:]:
        raise ValueError(f"compute_gae needs last_value of shape [N] = [{rewards.shape[1]}], got {list(last_value.shape)}")
    if not 0.0 < gamma <= 1.0 or not 0.0 <= lam <= 1.0:
        raise ValueError(f"compute_gae needs gamma in (0, 1] and lam in [0, 1], got gamma={gamma}, lam={lam}")

    rewards = rewards.to(torch.float32)
    values = values.to(torch.float32)
    continues = 1.0 - episode_ends.to(torch.float32)  # [T, N]: 0 where transition t ended its episode
    num_steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    next_advantage = torch.zeros_like(last_value, dtype=torch.float32)  # A_{t+1}
    next_value = last_value.to(torch.float32)  # V(s_{t+1})
    for t in reversed(range(num_steps)):
        delta = rewards[t] + gamma * next_value * continues[t] - values[t]
        next_advantage = delta + gamma * lam * continues[t] * next_advantage
        advantages[t] = next_advantage
        next_value = values[t]
    return advantages, advantages + values
