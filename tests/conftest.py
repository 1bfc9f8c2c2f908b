"""Shared test helpers: tiny configs and a counting env with known episode boundaries."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

import wanderlust  # noqa: F401  (registers the maze)
from wanderlust.runtime.config import TrainConfig, make_preset

torch.set_num_threads(1)

COUNT_ENV_ID = "wanderlust-test/Count-v0"


class CountEnv(gym.Env):
    """Observation = the step index in every pixel; episodes alternate between terminating after
    3 steps (reward 1 on the last) and truncating after 4 steps. Reward 0.5 on other steps."""

    metadata = {"render_modes": []}

    def __init__(self, size: int = 16) -> None:
        self.observation_space = spaces.Box(0, 255, (size, size, 1), np.uint8)
        self.action_space = spaces.Discrete(3)
        self.episode = -1
        self.t = 0

    def _obs(self) -> np.ndarray:
        return np.full(self.observation_space.shape, 10 * (self.episode % 5) + self.t, np.uint8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode += 1
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        terminating_episode = self.episode % 2 == 0
        terminated = terminating_episode and self.t == 3
        truncated = (not terminating_episode) and self.t == 4
        reward = 1.0 if terminated else 0.5
        return self._obs(), reward, terminated, truncated, {}


if COUNT_ENV_ID not in gym.registry:
    gym.register(COUNT_ENV_ID, entry_point=CountEnv)


def tiny_config(**changes) -> TrainConfig:
    """A config that trains in about a second: 2 maze envs x 16 steps, small frames."""
    config = make_preset("quick")
    config.env.maze_size = 5
    config.env.maze_obs_size = 40
    config.env.frame_stack = 2
    config.ppo.num_steps = 16
    config.total_steps = 64
    config.checkpoint_every = 32
    config.novelty_name = "rnd"
    for key, value in changes.items():
        target = config
        *parents, leaf = key.split("__")
        for parent in parents:
            target = getattr(target, parent)
        setattr(target, leaf, value)
    return config


@pytest.fixture
def tiny():
    return tiny_config
