"""Intrinsic Curiosity Module: losses, reward, Box and Discrete actions."""

from __future__ import annotations

import math

import gymnasium
import pytest
import torch

from wanderlust.novelty.base import NoveltyBatch, ObsSpec
from wanderlust.novelty.icm import ICMConfig, ICMNovelty, forward_error
from wanderlust.novelty.nets import action_features, inverse_dynamics_loss

SPEC = ObsSpec((4, 64, 64), 1)
DISCRETE = gymnasium.spaces.Discrete(4)
BOX = gymnasium.spaces.Box(-1.0, 1.0, (3,))


def transitions(space: gymnasium.spaces.Space, batch: int, seed: int) -> NoveltyBatch:
    generator = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, 256, (batch, *SPEC.shape), generator=generator, dtype=torch.uint8)
    next_obs = torch.randint(0, 256, (batch, *SPEC.shape), generator=generator, dtype=torch.uint8)
    if isinstance(space, gymnasium.spaces.Discrete):
        actions = torch.randint(0, int(space.n), (batch,), generator=generator)
    else:
        actions = torch.rand((batch, space.shape[0]), generator=generator) * 2 - 1
    return NoveltyBatch(obs, next_obs, actions)


def icm_reward(module: ICMNovelty, batch: NoveltyBatch) -> torch.Tensor:
    ends = torch.zeros(batch.obs.shape[0], dtype=torch.bool)
    return module.reward(batch.obs, batch.next_obs, batch.actions, ends)


def mean_losses(module: ICMNovelty, batch: NoveltyBatch) -> tuple[float, float]:
    with torch.no_grad():
        inverse, forward = module.losses(batch.obs, batch.next_obs, batch.actions)
    return inverse.mean().item(), forward.mean().item()


def test_forward_error_by_hand():
    predicted = torch.tensor([[1.0, 3.0], [0.0, 0.0]])
    target = torch.tensor([[0.0, 0.0], [2.0, 2.0]])
    # 0.5 * scale * mean([1, 9]) = 0.5 * 10 * 5; 0.5 * 10 * mean([4, 4])
    assert forward_error(predicted, target, 10.0).tolist() == pytest.approx([25.0, 20.0])


def test_action_features_and_inverse_loss_by_hand():
    assert action_features(torch.tensor([2, 0]), DISCRETE).tolist() == [[0, 0, 1, 0], [1, 0, 0, 0]]
    box_actions = torch.tensor([[0.5, -1.0, 0.0]])
    assert torch.equal(action_features(box_actions, BOX), box_actions)
    logits = torch.tensor([[0.0, 0.0, 0.0, 0.0]])
    assert inverse_dynamics_loss(logits, torch.tensor([1]), DISCRETE).item() == pytest.approx(math.log(4.0))
    # tanh(0) = 0 against [0.5, -1, 0]: mean of [0.25, 1, 0]
    assert inverse_dynamics_loss(torch.zeros(1, 3), box_actions, BOX).item() == pytest.approx(1.25 / 3)


@pytest.mark.parametrize("space", [DISCRETE, BOX], ids=["discrete", "box"])
def test_losses_and_reward_drop_on_a_fixed_batch(space):
    torch.manual_seed(0)
    module = ICMNovelty(SPEC, space, ICMConfig(update_epochs=4, minibatch_size=16), "cpu")
    batch = transitions(space, 16, seed=1)
    inverse_before, forward_before = mean_losses(module, batch)
    reward_before = icm_reward(module, batch).mean().item()
    for _ in range(5):
        metrics = module.update(batch)
    assert set(metrics) == {"novelty/icm_forward_loss", "novelty/icm_inverse_loss"}
    inverse_after, forward_after = mean_losses(module, batch)
    assert inverse_after < 0.7 * inverse_before
    assert forward_after < 0.5 * forward_before
    assert icm_reward(module, batch).mean().item() < 0.5 * reward_before


def test_reward_is_eta_times_forward_error():
    torch.manual_seed(0)
    module = ICMNovelty(SPEC, DISCRETE, ICMConfig(eta=0.5), "cpu")
    batch = transitions(DISCRETE, 4, seed=2)
    with torch.no_grad():
        _, errors = module.losses(batch.obs, batch.next_obs, batch.actions)
    reward = icm_reward(module, batch)
    assert not reward.requires_grad and reward.dtype == torch.float32
    assert torch.allclose(reward, 0.5 * errors)


def test_forward_loss_does_not_train_the_encoder():
    torch.manual_seed(0)
    module = ICMNovelty(SPEC, DISCRETE, ICMConfig(beta=1.0), "cpu")  # forward loss only
    encoder_before = [p.clone() for p in module.encoder.parameters()]
    forward_before = [p.clone() for p in module.forward_model.parameters()]
    module.update(transitions(DISCRETE, 8, seed=3))
    assert all(torch.equal(a, b) for a, b in zip(encoder_before, module.encoder.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(forward_before, module.forward_model.parameters()))


def test_unsupported_action_space_and_bad_actions_raise():
    with pytest.raises(ValueError, match="Discrete and 1-D Box"):
        ICMNovelty(SPEC, gymnasium.spaces.MultiDiscrete([2, 3]), ICMConfig(), "cpu")
    module = ICMNovelty(SPEC, BOX, ICMConfig(), "cpu")
    batch = transitions(BOX, 2, seed=4)
    with pytest.raises(ValueError, match="Box actions"):
        module.reward(batch.obs, batch.next_obs, torch.zeros(2, dtype=torch.int64), torch.zeros(2, dtype=torch.bool))
