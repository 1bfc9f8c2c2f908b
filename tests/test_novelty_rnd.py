"""Random Network Distillation: fixed target, trained predictor, normalised inputs."""

from __future__ import annotations

import pytest
import torch

from wanderlust.novelty.base import NoveltyBatch, ObsSpec
from wanderlust.novelty.rnd import RNDConfig, RNDNovelty, normalize_and_clip, prediction_novelty

SPEC = ObsSpec((4, 64, 64), 1)


def random_obs(batch: int, seed: int, spec: ObsSpec = SPEC) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (batch, *spec.shape), generator=generator, dtype=torch.uint8)


def batch_of(obs: torch.Tensor) -> NoveltyBatch:
    return NoveltyBatch(obs=obs, next_obs=obs, actions=torch.zeros(obs.shape[0], dtype=torch.int64))


def test_prediction_novelty_is_half_the_summed_squared_error():
    target = torch.tensor([[1.0, 2.0], [0.0, 0.0]])
    predicted = torch.tensor([[0.0, 0.0], [3.0, -1.0]])
    assert prediction_novelty(target, predicted).tolist() == pytest.approx([2.5, 5.0])


def test_normalize_and_clip_by_hand():
    x = torch.tensor([0.0, 10.0, 100.0, -100.0])
    out = normalize_and_clip(x, torch.tensor(10.0), torch.tensor(4.0), 5.0)
    assert out.tolist() == pytest.approx([-2.5, 0.0, 5.0, -5.0])


def test_first_reward_initialises_the_normaliser_once():
    torch.manual_seed(0)
    module = RNDNovelty(SPEC, RNDConfig(), "cpu")
    obs = random_obs(8, 1)
    module.reward(obs, obs, torch.zeros(8), torch.zeros(8, dtype=torch.bool))
    assert module.obs_rms.count == pytest.approx(8, abs=1e-3)
    newest = obs[:, -1].to(torch.float64)
    assert torch.allclose(module.obs_rms.mean[0], newest.mean(0), atol=1e-2)
    module.reward(random_obs(8, 2), random_obs(8, 2), torch.zeros(8), torch.zeros(8, dtype=torch.bool))
    assert module.obs_rms.count == pytest.approx(8, abs=1e-3)  # only update() adds data afterwards


def test_normalised_inputs_are_clipped():
    torch.manual_seed(0)
    module = RNDNovelty(SPEC, RNDConfig(obs_clip=5.0), "cpu")
    dim = torch.full((16, *SPEC.shape), 10, dtype=torch.uint8)
    dim[::2] = 12  # mean 11, std 1 per pixel
    module.update(batch_of(dim))
    bright = torch.full((2, *SPEC.shape), 255, dtype=torch.uint8)
    bright[1] = 0
    normalized = module.normalize(module.network_inputs(bright))
    assert normalized[0].max().item() == 5.0 and normalized[1].min().item() == -5.0


def test_update_trains_predictor_and_never_touches_target():
    torch.manual_seed(0)
    module = RNDNovelty(SPEC, RNDConfig(minibatch_size=8), "cpu")
    target_before = [p.clone() for p in module.target.parameters()]
    predictor_before = [p.clone() for p in module.predictor.parameters()]
    optimized = {id(p) for group in module.optimizer.param_groups for p in group["params"]}
    assert not optimized & {id(p) for p in module.target.parameters()}
    assert all(not p.requires_grad for p in module.target.parameters())

    metrics = module.update(batch_of(random_obs(16, 3)))

    assert set(metrics) == {"novelty/rnd_loss"}
    assert all(isinstance(v, float) and v == v for v in metrics.values())
    assert all(torch.equal(a, b) for a, b in zip(target_before, module.target.parameters()))
    assert all(p.grad is None for p in module.target.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(predictor_before, module.predictor.parameters()))


def test_reward_of_repeated_observations_drops():
    torch.manual_seed(0)
    module = RNDNovelty(SPEC, RNDConfig(learning_rate=1e-3, minibatch_size=16), "cpu")
    obs = random_obs(16, 4)
    no_ends = torch.zeros(16, dtype=torch.bool)
    before = module.reward(obs, obs, torch.zeros(16), no_ends).mean().item()
    for _ in range(6):
        module.update(batch_of(obs))
    after = module.reward(obs, obs, torch.zeros(16), no_ends).mean().item()
    assert after < 0.5 * before


def test_all_channels_feeds_the_whole_stack():
    spec = ObsSpec((12, 64, 64), 3)
    module = RNDNovelty(spec, RNDConfig(all_channels=True), "cpu")
    assert module.network_inputs(random_obs(2, 5, spec)).shape == (2, 12, 64, 64)
    gray = RNDNovelty(spec, RNDConfig(), "cpu")
    assert gray.network_inputs(random_obs(2, 5, spec)).shape == (2, 1, 64, 64)


def test_bad_config_and_small_frames_raise():
    with pytest.raises(ValueError, match="update_proportion"):
        RNDNovelty(SPEC, RNDConfig(update_proportion=0.0), "cpu")
    with pytest.raises(ValueError, match="too small"):
        RNDNovelty(ObsSpec((1, 16, 16), 1), RNDConfig(), "cpu")
