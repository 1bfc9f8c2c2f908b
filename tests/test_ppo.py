"""PPO math against hand computations, and the update's gradients, learning and reproducibility."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gymnasium import spaces

from wanderlust.agent.actor_critic import ActorCritic
from wanderlust.agent.encoders import ENCODER_NAMES
from wanderlust.algo.ppo import (
    PPOBatch,
    PPOConfig,
    clipped_surrogate_loss,
    combine_advantages,
    explained_variance,
    learning_rate_at,
    normalize_advantages,
    ppo_update,
    value_loss,
)

OBS_SHAPE = (2, 36, 36)
ACTION_SPACES = {
    "box": spaces.Box(-1.0, 1.0, (4,), dtype=np.float32),
    "binned": spaces.Box(-1.0, 1.0, (4,), dtype=np.float32),
    "discrete": spaces.Discrete(7),
}
ACTION_BINS = {"binned": 5}
"""Agents built for these action kinds use a binned Box head; the others a Gaussian or categorical."""


# ---------------------------------------------------------------- pure functions


def test_clipped_surrogate_loss_by_hand() -> None:
    # eps = 0.2. (ratio, A) -> max(-A*r, -A*clip(r)):
    # (1.5, +1) -> max(-1.5, -1.2) = -1.2  clipped: no gradient
    # (0.5, +1) -> max(-0.5, -0.8) = -0.5  unclipped
    # (1.5, -1) -> max( 1.5,  1.2) =  1.5  unclipped
    # (0.5, -1) -> max( 0.5,  0.8) =  0.8  clipped: no gradient
    # (1.1, +2) -> max(-2.2, -2.2) = -2.2  inside the range
    ratios = torch.tensor([1.5, 0.5, 1.5, 0.5, 1.1], dtype=torch.float64)
    advantages = torch.tensor([1.0, 1.0, -1.0, -1.0, 2.0], dtype=torch.float64)
    old_log_prob = torch.tensor([-1.0, -2.0, -0.5, -3.0, -1.5], dtype=torch.float64)
    new_log_prob = (old_log_prob + ratios.log()).requires_grad_(True)
    loss, approx_kl, clip_fraction = clipped_surrogate_loss(new_log_prob, old_log_prob, advantages, 0.2)
    assert math.isclose(loss.item(), (-1.2 - 0.5 + 1.5 + 0.8 - 2.2) / 5, abs_tol=1e-12)
    assert math.isclose(clip_fraction.item(), 4 / 5)
    kl_terms = [0.5 - math.log(1.5), -0.5 - math.log(0.5), 0.5 - math.log(1.5), -0.5 - math.log(0.5),
                0.1 - math.log(1.1)]
    assert math.isclose(approx_kl.item(), sum(kl_terms) / 5, abs_tol=1e-12)
    loss.backward()
    # d/dlogp (-A * r) = -A * r, divided by the 5 samples; clipped samples give 0.
    expected_grad = torch.tensor([0.0, -0.5 / 5, 1.5 / 5, 0.0, -2.2 / 5], dtype=torch.float64)
    torch.testing.assert_close(new_log_prob.grad, expected_grad)
    assert not approx_kl.requires_grad and not clip_fraction.requires_grad


def test_value_loss_by_hand() -> None:
    new = torch.tensor([2.0, 0.0, 1.0])
    old = torch.tensor([1.0, 1.0, 1.0])
    returns = torch.tensor([3.0, 0.0, -1.0])
    # unclipped squared errors: 1, 0, 4 -> 0.5 * 5/3
    assert math.isclose(value_loss(new, old, returns, None).item(), 0.5 * 5 / 3, rel_tol=1e-6)
    # clipped values (eps 0.5): 1.5, 0.5, 1.0 -> errors 2.25, 0.25, 4; max per sample: 2.25, 0.25, 4
    assert math.isclose(value_loss(new, old, returns, 0.5).item(), 0.5 * 6.5 / 3, rel_tol=1e-6)


def test_normalize_and_combine_advantages() -> None:
    combined = combine_advantages(torch.tensor([1.0, -1.0]), torch.tensor([0.5, 3.0]), ext_coef=2.0, int_coef=1.0)
    torch.testing.assert_close(combined, torch.tensor([2.5, 1.0]))
    normalized = normalize_advantages(torch.tensor([1.0, 2.0, 3.0, 10.0]))
    assert abs(normalized.mean().item()) < 1e-6
    assert abs(normalized.std().item() - 1.0) < 1e-6
    torch.testing.assert_close(normalize_advantages(torch.tensor([5.0])), torch.tensor([0.0]))


def test_explained_variance() -> None:
    y = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert explained_variance(y, y) == pytest.approx(1.0)
    assert explained_variance(torch.full((4,), 2.5), y) == pytest.approx(0.0)
    # residual [1, -1, 1, -1] has variance 1; Var(y) = 1.25.
    assert explained_variance(y + torch.tensor([-1.0, 1.0, -1.0, 1.0]), y) == pytest.approx(1 - 1 / 1.25)
    assert math.isnan(explained_variance(y, torch.ones(4)))


def test_learning_rate_annealing() -> None:
    config = PPOConfig(learning_rate=1.0)
    assert [learning_rate_at(config, i, 4) for i in range(4)] == [1.0, 0.75, 0.5, 0.25]
    assert learning_rate_at(PPOConfig(learning_rate=0.3, anneal_lr=False), 3, 4) == 0.3
    with pytest.raises(ValueError, match="iteration"):
        learning_rate_at(config, 4, 4)


@pytest.mark.parametrize(
    "field,value",
    [("num_steps", 0), ("num_minibatches", -1), ("update_epochs", 1.5), ("clip_coef", 0.0), ("gamma", 0.0),
     ("gamma_int", 1.01), ("gae_lambda", -0.1), ("learning_rate", 0.0), ("max_grad_norm", -1.0),
     ("ent_coef", -0.01), ("target_kl", 0.0)],
)
def test_config_validation(field: str, value: float) -> None:
    PPOConfig().validate()
    with pytest.raises(ValueError, match=f"ppo.{field}"):
        PPOConfig(**{field: value}).validate()


def test_config_rejects_no_advantage_at_all() -> None:
    with pytest.raises(ValueError, match="ext_coef and ppo.int_coef"):
        PPOConfig(ext_coef=0.0, int_coef=0.0).validate()


# ---------------------------------------------------------------- the update


def make_agent(action: str, encoder: str = "seed", seed: int = 0) -> ActorCritic:
    torch.manual_seed(seed)
    return ActorCritic(OBS_SHAPE, ACTION_SPACES[action], encoder=encoder, action_bins=ACTION_BINS.get(action, 0))


def make_batch(agent: ActorCritic, size: int = 32, seed: int = 0) -> PPOBatch:
    """A random rollout acted by ``agent``; ext advantage +1 on the first half, -1 on the second."""
    generator = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, 256, (size, *OBS_SHAPE), generator=generator, dtype=torch.uint8)
    torch.manual_seed(seed)
    out = agent.act(obs)
    half = size // 2
    return PPOBatch(
        obs=obs,
        actions=out.action,
        log_probs=out.log_prob,
        advantages_ext=torch.cat([torch.ones(half), -torch.ones(size - half)]),
        advantages_int=0.1 * torch.randn(size, generator=generator),
        returns_ext=out.value_ext + torch.randn(size, generator=generator),
        returns_int=out.value_int + torch.randn(size, generator=generator),
        values_ext=out.value_ext,
        values_int=out.value_int,
    )


@pytest.mark.parametrize("action", sorted(ACTION_SPACES))
@pytest.mark.parametrize("encoder", ENCODER_NAMES)
def test_every_parameter_gets_a_finite_nonzero_gradient(encoder: str, action: str) -> None:
    """DESIGN.md section 1: the policy is trainable end to end through log pi and the critics."""
    agent = make_agent(action, encoder)
    batch = make_batch(agent, size=16)
    optimizer = torch.optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5)
    config = PPOConfig(num_minibatches=2, update_epochs=1)
    metrics = ppo_update(agent, optimizer, batch, config, torch.Generator().manual_seed(0))
    for name, parameter in agent.named_parameters():
        assert parameter.grad is not None, f"{name} got no gradient"
        assert torch.isfinite(parameter.grad).all(), f"{name} has a non-finite gradient"
        assert parameter.grad.abs().sum() > 0, f"{name} has an all-zero gradient"
    for key in ("policy_loss", "value_loss_ext", "value_loss_int", "entropy", "approx_kl", "clipfrac",
                "explained_variance_ext", "explained_variance_int", "grad_norm"):
        assert math.isfinite(metrics[f"losses/{key}"]), key
    assert metrics["losses/minibatch_updates"] == 2.0


def test_policy_loss_alone_reaches_actor_and_encoder_through_log_prob() -> None:
    """With no value or entropy term the only path is log pi: actor and encoder move, critics do not."""
    agent = make_agent("box")
    batch = make_batch(agent, size=16)
    optimizer = torch.optim.SGD(agent.parameters(), lr=0.0)
    config = PPOConfig(num_minibatches=1, update_epochs=1, vf_coef=0.0, ent_coef=0.0)
    ppo_update(agent, optimizer, batch, config, torch.Generator().manual_seed(0))
    for name, parameter in agent.named_parameters():
        nonzero = parameter.grad is not None and bool(parameter.grad.abs().sum() > 0)
        assert nonzero == (not name.startswith("value_")), name


@pytest.mark.parametrize("action", sorted(ACTION_SPACES))
def test_updates_raise_log_prob_of_positive_advantage_actions(action: str) -> None:
    agent = make_agent(action)
    batch = make_batch(agent, size=64)
    optimizer = torch.optim.Adam(agent.parameters(), lr=1e-3, eps=1e-5)
    config = PPOConfig(num_minibatches=2, update_epochs=4, int_coef=0.0, ent_coef=0.0)
    generator = torch.Generator().manual_seed(0)
    for _ in range(3):
        ppo_update(agent, optimizer, batch, config, generator)
    with torch.no_grad():
        new_log_prob = agent.evaluate(batch.obs, batch.actions).log_prob
    change = new_log_prob - batch.log_probs
    positive = batch.advantages_ext > 0
    assert change[positive].mean() > 0.02
    assert change[~positive].mean() < -0.02


def test_same_generator_seed_gives_identical_parameters() -> None:
    def run(generator_seed: int) -> list[torch.Tensor]:
        agent = make_agent("discrete")
        batch = make_batch(agent, size=24)
        optimizer = torch.optim.Adam(agent.parameters(), lr=1e-3, eps=1e-5)
        config = PPOConfig(num_minibatches=3, update_epochs=2)
        ppo_update(agent, optimizer, batch, config, torch.Generator().manual_seed(generator_seed))
        return [p.detach().clone() for p in agent.parameters()]

    first, second, other = run(7), run(7), run(8)
    assert all(torch.equal(a, b) for a, b in zip(first, second))
    assert not all(torch.equal(a, b) for a, b in zip(first, other))  # the shuffle really comes from it


def test_target_kl_stops_the_update_early() -> None:
    agent = make_agent("discrete")
    batch = make_batch(agent, size=16)
    optimizer = torch.optim.Adam(agent.parameters(), lr=1e-2)
    config = PPOConfig(num_minibatches=4, update_epochs=4, target_kl=1e-6)
    metrics = ppo_update(agent, optimizer, batch, config, torch.Generator().manual_seed(0))
    # Minibatch 1 has ratio 1 (KL 0); after the first step the next one exceeds the target.
    assert metrics["losses/minibatch_updates"] == 2.0
    no_stop = ppo_update(make_agent("discrete"), optimizer, batch, PPOConfig(num_minibatches=4, update_epochs=4),
                         torch.Generator().manual_seed(0))
    assert no_stop["losses/minibatch_updates"] == 16.0


def test_bad_batches_are_rejected() -> None:
    agent = make_agent("discrete")
    batch = make_batch(agent, size=4)
    with pytest.raises(ValueError, match="minibatches"):
        ppo_update(agent, torch.optim.Adam(agent.parameters()), batch, PPOConfig(num_minibatches=8),
                   torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="PPOBatch.log_probs has 3 rows"):
        PPOBatch(batch.obs, batch.actions, batch.log_probs[:3], batch.advantages_ext, batch.advantages_int,
                 batch.returns_ext, batch.returns_int, batch.values_ext, batch.values_int)
