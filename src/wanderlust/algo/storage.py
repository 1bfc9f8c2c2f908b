"""Rollout storage shaped ``[T, N]`` (T steps per env per rollout, N envs), preallocated once.

Observations are kept as uint8 frames ``[C, H, W]`` (float32 for vector observations ``[D]``). ``next_obs[t]`` is the frame that ``actions[t]`` produced: at an
episode end it is the final observation of that episode (not the reset one), so novelty is
computed on the real transition.
"""

from __future__ import annotations

import torch
from gymnasium import spaces

from wanderlust.algo.ppo import PPOBatch
from wanderlust.novelty.base import NoveltyBatch


class RolloutStorage:
    def __init__(
        self, num_steps: int, num_envs: int, obs_shape: tuple[int, ...], action_space: spaces.Space,
        device: torch.device,
    ) -> None:
        T, N = num_steps, num_envs
        self.num_steps, self.num_envs = T, N
        obs_dtype = torch.uint8 if len(obs_shape) == 3 else torch.float32  # frames or vectors
        self.obs = torch.zeros((T, N, *obs_shape), dtype=obs_dtype, device=device)
        self.next_obs = torch.zeros((T, N, *obs_shape), dtype=obs_dtype, device=device)
        if isinstance(action_space, spaces.Discrete):
            self.actions = torch.zeros((T, N), dtype=torch.int64, device=device)
            self.env_actions = torch.zeros((T, N), dtype=torch.int64, device=device)
        else:
            self.actions = torch.zeros((T, N, *action_space.shape), dtype=torch.float32, device=device)
            self.env_actions = torch.zeros((T, N, *action_space.shape), dtype=torch.float32, device=device)
        self.log_probs = torch.zeros((T, N), device=device)
        self.rewards_ext = torch.zeros((T, N), device=device)
        self.rewards_int = torch.zeros((T, N), device=device)
        self.episode_ends = torch.zeros((T, N), dtype=torch.bool, device=device)
        self.values_ext = torch.zeros((T, N), device=device)
        self.values_int = torch.zeros((T, N), device=device)

    def flat(self, x: torch.Tensor) -> torch.Tensor:
        """``[T, N, ...] -> [T * N, ...]``."""
        return x.reshape(self.num_steps * self.num_envs, *x.shape[2:])

    def novelty_batch(self) -> NoveltyBatch:
        return NoveltyBatch(
            obs=self.flat(self.obs), next_obs=self.flat(self.next_obs), actions=self.flat(self.env_actions),
            episode_ends=self.flat(self.episode_ends), num_envs=self.num_envs,
        )

    def ppo_batch(
        self, advantages_ext: torch.Tensor, advantages_int: torch.Tensor,
        returns_ext: torch.Tensor, returns_int: torch.Tensor,
    ) -> PPOBatch:
        return PPOBatch(
            obs=self.flat(self.obs),
            actions=self.flat(self.actions),
            log_probs=self.flat(self.log_probs),
            advantages_ext=self.flat(advantages_ext),
            advantages_int=self.flat(advantages_int),
            returns_ext=self.flat(returns_ext),
            returns_int=self.flat(returns_int),
            values_ext=self.flat(self.values_ext),
            values_int=self.flat(self.values_int),
        )
