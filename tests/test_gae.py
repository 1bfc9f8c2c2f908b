"""GAE against hand computations and its lambda = 0 / lambda = 1 limits."""

from __future__ import annotations

import pytest
import torch

from wanderlust.algo.gae import compute_gae


def test_gae_by_hand_with_an_episode_end() -> None:
    # gamma = lam = 0.5, so gamma * lam = 0.25. Columns are the N = 2 envs.
    rewards = torch.tensor([[1.0, 0.0], [2.0, 0.0], [3.0, 1.0]])
    values = torch.tensor([[0.5, 1.0], [1.0, 1.0], [2.0, 1.0]])
    episode_ends = torch.tensor([[False, False], [True, False], [False, False]])
    last_value = torch.tensor([4.0, 2.0])
    # env 0: t=2: delta = 3 + 0.5*4 - 2 = 3,            A = 3
    #        t=1: ends -> delta = 2 - 1 = 1,           A = 1 (trace cut)
    #        t=0: delta = 1 + 0.5*1 - 0.5 = 1,         A = 1 + 0.25*1 = 1.25
    # env 1: t=2: delta = 1 + 0.5*2 - 1 = 1,            A = 1
    #        t=1: delta = 0 + 0.5*1 - 1 = -0.5,        A = -0.5 + 0.25*1 = -0.25
    #        t=0: delta = -0.5,                        A = -0.5 + 0.25*(-0.25) = -0.5625
    advantages, returns = compute_gae(rewards, values, episode_ends, last_value, gamma=0.5, lam=0.5)
    expected_adv = torch.tensor([[1.25, -0.5625], [1.0, -0.25], [3.0, 1.0]])
    torch.testing.assert_close(advantages, expected_adv)
    torch.testing.assert_close(returns, torch.tensor([[1.75, 0.4375], [2.0, 0.75], [5.0, 2.0]]))


def random_rollout(seed: int, steps: int = 7, envs: int = 3):
    generator = torch.Generator().manual_seed(seed)
    rewards = torch.randn(steps, envs, generator=generator)
    values = torch.randn(steps, envs, generator=generator)
    episode_ends = torch.rand(steps, envs, generator=generator) < 0.3
    last_value = torch.randn(envs, generator=generator)
    return rewards, values, episode_ends, last_value


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lambda_one_is_discounted_return_minus_value(seed: int) -> None:
    rewards, values, episode_ends, last_value = random_rollout(seed)
    gamma = 0.9
    # Monte-Carlo return, bootstrapped from last_value, restarted at each episode end.
    expected_returns = torch.zeros_like(rewards)
    running = last_value.clone()
    for t in reversed(range(rewards.shape[0])):
        running = rewards[t] + gamma * running * (~episode_ends[t]).float()
        expected_returns[t] = running
    advantages, returns = compute_gae(rewards, values, episode_ends, last_value, gamma=gamma, lam=1.0)
    torch.testing.assert_close(returns, expected_returns)
    torch.testing.assert_close(advantages, expected_returns - values)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lambda_zero_is_td_error(seed: int) -> None:
    rewards, values, episode_ends, last_value = random_rollout(seed)
    gamma = 0.9
    next_values = torch.cat([values[1:], last_value[None]], dim=0)
    td_error = rewards + gamma * next_values * (~episode_ends).float() - values
    advantages, _ = compute_gae(rewards, values, episode_ends, last_value, gamma=gamma, lam=0.0)
    torch.testing.assert_close(advantages, td_error)


def test_all_false_episode_ends_bootstrap_through_everything() -> None:
    # The intrinsic stream: a "terminal" flag must not matter when the caller passes all False.
    rewards = torch.ones(2, 1)
    values = torch.zeros(2, 1)
    _, returns = compute_gae(rewards, values, torch.zeros(2, 1, dtype=torch.bool), torch.tensor([10.0]), 1.0, 1.0)
    torch.testing.assert_close(returns, torch.tensor([[12.0], [11.0]]))


def test_bad_shapes_and_coefficients_are_rejected() -> None:
    rewards, values, episode_ends, last_value = random_rollout(0)
    with pytest.raises(ValueError, match=r"\[T, N\]"):
        compute_gae(rewards, values[:-1], episode_ends, last_value, 0.9, 0.9)
    with pytest.raises(ValueError, match=r"last_value of shape \[N\]"):
        compute_gae(rewards, values, episode_ends, last_value[:-1], 0.9, 0.9)
    with pytest.raises(ValueError, match="gamma in"):
        compute_gae(rewards, values, episode_ends, last_value, 1.5, 0.9)
