"""ActorCritic: acting, evaluation, values, initialisation and supported action spaces."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from wanderlust.agent.actor_critic import ActorCritic, build_agent
from wanderlust.runtime.config import TrainConfig

OBS_SHAPE = (2, 36, 36)


def random_obs(batch: int, shape: tuple[int, int, int] = OBS_SHAPE) -> torch.Tensor:
    return torch.randint(0, 256, (batch, *shape), dtype=torch.uint8)


def test_box_act_evaluate_values() -> None:
    torch.manual_seed(0)
    agent = ActorCritic(OBS_SHAPE, spaces.Box(-1.0, 1.0, (4,), dtype=np.float32), encoder="nature")
    obs = random_obs(5)
    out = agent.act(obs)
    assert out.action.shape == (5, 4) and out.action.dtype == torch.float32
    assert out.env_action.shape == (5, 4) and out.env_action.dtype == torch.float32
    assert out.env_action.abs().max() <= 1.0
    torch.testing.assert_close(out.env_action, torch.tanh(out.action))
    for tensor in (out.log_prob, out.value_ext, out.value_int):
        assert tensor.shape == (5,) and not tensor.requires_grad
    evaluation = agent.evaluate(obs, out.action)
    torch.testing.assert_close(evaluation.log_prob, out.log_prob)
    torch.testing.assert_close(evaluation.value_ext, out.value_ext)
    torch.testing.assert_close(evaluation.value_int, out.value_int)
    assert evaluation.log_prob.requires_grad and evaluation.entropy.shape == (5,)
    value_ext, value_int = agent.values(obs)
    torch.testing.assert_close(value_ext, out.value_ext)
    torch.testing.assert_close(value_int, out.value_int)
    assert not value_ext.requires_grad
    # The two critics are separate heads.
    assert not torch.allclose(value_ext, value_int)


def test_box_deterministic_action_is_the_mean() -> None:
    torch.manual_seed(0)
    agent = ActorCritic(OBS_SHAPE, spaces.Box(-1.0, 1.0, (4,)), encoder="seed")
    obs = random_obs(3)
    first = agent.act(obs, deterministic=True)
    second = agent.act(obs, deterministic=True)
    torch.testing.assert_close(first.action, second.action)
    mean = agent.actor(agent.encoder(obs)).detach()
    torch.testing.assert_close(first.action, mean)
    torch.testing.assert_close(first.env_action, torch.tanh(mean))
    torch.testing.assert_close(agent(obs), torch.tanh(mean))
    assert not torch.allclose(agent.act(obs).action, mean)  # sampling adds noise


def test_discrete_act_evaluate() -> None:
    torch.manual_seed(0)
    agent = ActorCritic(OBS_SHAPE, spaces.Discrete(7), encoder="impala")
    obs = random_obs(6)
    out = agent.act(obs)
    assert out.action.shape == (6,) and out.action.dtype == torch.int64
    assert torch.equal(out.env_action, out.action)
    assert ((out.action >= 0) & (out.action < 7)).all()
    evaluation = agent.evaluate(obs, out.action)
    torch.testing.assert_close(evaluation.log_prob, out.log_prob)
    # Near-uniform initial policy (actor gain 0.01): entropy close to log 7.
    assert torch.all((evaluation.entropy - np.log(7)).abs() < 0.01)
    greedy = agent.act(obs, deterministic=True).action
    assert torch.equal(greedy, agent.actor(agent.encoder(obs)).argmax(-1))


def test_cleanrl_initialisation() -> None:
    torch.manual_seed(0)
    agent = ActorCritic(OBS_SHAPE, spaces.Box(-1.0, 1.0, (4,)), encoder="nature")
    # Orthogonal rows of norm `gain` (out_features <= in_features), zero biases.
    torch.testing.assert_close(agent.actor.weight.norm(dim=1), torch.full((4,), 0.01))
    torch.testing.assert_close(agent.value_ext.weight.norm(dim=1), torch.ones(1))
    torch.testing.assert_close(agent.value_int.weight.norm(dim=1), torch.ones(1))
    hidden = agent.encoder.head[1].weight  # [512, 64]: orthogonal columns of norm sqrt(2)
    torch.testing.assert_close(hidden.T @ hidden, 2.0 * torch.eye(64), atol=1e-4, rtol=0)
    for layer in (agent.actor, agent.value_ext, agent.value_int, agent.encoder.head[1]):
        assert torch.all(layer.bias == 0)
    assert torch.equal(agent.log_std, torch.zeros(4))


@pytest.mark.parametrize(
    "space",
    [
        spaces.MultiDiscrete([3, 3]),
        spaces.Dict({"a": spaces.Discrete(2)}),
        spaces.Box(-2.0, 2.0, (4,)),
        spaces.Box(0.0, 1.0, (2,)),
        spaces.Box(-1.0, 1.0, (2, 2)),
        spaces.Discrete(4, start=1),
    ],
)
def test_unsupported_action_spaces_are_rejected(space: spaces.Space) -> None:
    with pytest.raises(ValueError, match="supported: Box"):
        ActorCritic(OBS_SHAPE, space, encoder="seed")


def test_binned_box_act_evaluate_and_greedy() -> None:
    torch.manual_seed(0)
    agent = ActorCritic(OBS_SHAPE, spaces.Box(-1.0, 1.0, (4,)), encoder="seed", action_bins=5)
    assert agent.log_std is None and agent.actor.out_features == 4 * 5
    obs = random_obs(6)
    out = agent.act(obs)
    assert out.action.shape == (6, 4) and out.action.dtype == torch.float32
    assert torch.equal(out.action, out.action.round()) and out.action.min() >= 0 and out.action.max() <= 4
    torch.testing.assert_close(out.env_action, out.action / 2.0 - 1.0)  # 5 bins: -1, -0.5, 0, 0.5, 1
    evaluation = agent.evaluate(obs, out.action)
    torch.testing.assert_close(evaluation.log_prob, out.log_prob)
    # Near-uniform initial policy: entropy close to 4 axes x log 5.
    assert torch.all((evaluation.entropy - 4 * np.log(5)).abs() < 0.01)
    logits = agent.actor(agent.encoder(obs)).detach().view(6, 4, 5)
    greedy = agent.act(obs, deterministic=True)
    assert torch.equal(greedy.action, logits.argmax(-1).float())
    torch.testing.assert_close(agent(obs), greedy.env_action)


def test_build_agent_follows_the_config() -> None:
    config = TrainConfig()
    config.encoder, config.action_bins = "seed", 7
    agent = build_agent(config, OBS_SHAPE, spaces.Box(-1.0, 1.0, (4,)))
    assert agent.action_bins == 7 and agent.actor.out_features == 28
    assert build_agent(config, OBS_SHAPE, spaces.Discrete(3)).actor.out_features == 3  # bins only for Box
    config.action_bins = 0
    assert build_agent(config, OBS_SHAPE, spaces.Box(-1.0, 1.0, (4,))).log_std.shape == (4,)
    assert not build_agent(config, OBS_SHAPE, spaces.Discrete(3)).encoder.center
    config.center_pixels = True
    assert build_agent(config, OBS_SHAPE, spaces.Discrete(3)).encoder.center


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("action_bins", bins, "action_bins must be 0") for bins in (1, -2, 2.5, True)]
    + [("log_std_init", value, "log_std_init must be a number") for value in (-6.0, 2.5, "low", True)],
)
def test_bad_policy_head_settings_are_rejected(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ActorCritic(OBS_SHAPE, spaces.Box(-1.0, 1.0, (4,)), encoder="seed", **{field: value})
    config = TrainConfig()
    setattr(config, field, value)
    with pytest.raises(ValueError, match=message):
        config.validate()


def test_log_std_init_sets_the_initial_noise() -> None:
    config = TrainConfig()
    config.encoder, config.log_std_init = "seed", -1.0
    agent = build_agent(config, OBS_SHAPE, spaces.Box(-1.0, 1.0, (4,)))
    assert torch.equal(agent.log_std.detach(), torch.full((4,), -1.0))
    # The sampled raw actions spread by exp(-1) around the (near-zero) initial mean.
    torch.manual_seed(0)
    obs = random_obs(1).expand(4000, *OBS_SHAPE)
    raw = agent.act(obs).action
    assert abs(raw.std().item() - np.exp(-1.0)) < 0.02
    # The entropy of the sticks: the base Gaussian's (std exp(-1)) less tanh's squeeze, small near 0.
    entropy = float(agent.evaluate(obs[:1], raw[:1]).entropy.detach())
    base = 4 * (0.5 + 0.5 * np.log(2 * np.pi) - 1.0)
    assert base - 0.6 < entropy < base
