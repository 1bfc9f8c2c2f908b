"""Every novelty module against the shared contract: factory, shapes, no grad, exact resume."""

from __future__ import annotations

import json

import gymnasium
import pytest
import torch

from wanderlust.novelty import (
    NOVELTY_NAMES, NoveltyBatch, NoveltyConfig, NoveltyModule, ObsSpec, RNDConfig, make_novelty,
)

NUM_ENVS = 2
OBS_SPECS = {
    "gray64": ObsSpec((4, 64, 64), 1),
    "rgb64": ObsSpec((12, 64, 64), 3),
    "gray84": ObsSpec((4, 84, 84), 1),
}
SPACES = {"discrete": gymnasium.spaces.Discrete(5), "box": gymnasium.spaces.Box(-1.0, 1.0, (4,))}


def small_config() -> NoveltyConfig:
    config = NoveltyConfig()
    config.rnd.minibatch_size = config.icm.minibatch_size = config.episodic.minibatch_size = 4
    config.rnd.update_epochs = 1
    # i.i.d. random frames are all equally far apart, which the default radius (3 mean steps) never
    # counts as a new landmark (tests/test_novelty_episodic_temporal.py); half a mean step always does
    config.episodic.landmark_radius = 0.5
    return config


def build(name: str, spec: ObsSpec, space: gymnasium.spaces.Space, seed: int) -> NoveltyModule:
    torch.manual_seed(seed)
    return make_novelty(name, small_config(), spec, space, NUM_ENVS, "cpu")


def rollout(spec: ObsSpec, space: gymnasium.spaces.Space, steps: int, seed: int) -> list[tuple[torch.Tensor, ...]]:
    """``steps`` transitions per env: (obs [N, C, H, W], next_obs, actions, episode_ends [N])."""
    generator = torch.Generator().manual_seed(seed)
    frames = torch.randint(0, 256, (steps + 1, NUM_ENVS, *spec.shape), generator=generator, dtype=torch.uint8)
    out = []
    for t in range(steps):
        if isinstance(space, gymnasium.spaces.Discrete):
            actions = torch.randint(0, int(space.n), (NUM_ENVS,), generator=generator)
        else:
            actions = torch.rand((NUM_ENVS, space.shape[0]), generator=generator) * 2 - 1
        ends = torch.tensor([t == 1, False])
        out.append((frames[t], frames[t + 1], actions, ends))
    return out


def flat_batch(transitions: list[tuple[torch.Tensor, ...]]) -> NoveltyBatch:
    obs, next_obs, actions, ends = (torch.cat(parts) for parts in zip(*transitions))
    return NoveltyBatch(obs, next_obs, actions, ends, NUM_ENVS)  # time-major, as RolloutStorage builds it


def rewards(module: NoveltyModule, transitions: list[tuple[torch.Tensor, ...]]) -> torch.Tensor:
    """Call ``module`` the way the trainer does: per step if sequential, else once on the flat batch."""
    if module.sequential:
        return torch.stack([module.reward(*transition) for transition in transitions])
    batch = flat_batch(transitions)
    return module.reward(batch.obs, batch.next_obs, batch.actions, torch.zeros(batch.obs.shape[0], dtype=torch.bool))


def checkpoint_round_trip(state: dict) -> dict:
    """Keep tensors aside (as safetensors would), send everything else through JSON."""
    tensors: dict[str, torch.Tensor] = {}

    def strip(value, path):
        if isinstance(value, torch.Tensor):
            assert value.device.type == "cpu", path
            tensors[path] = value.clone()
            return {"__tensor__": path}
        if isinstance(value, dict):
            assert all(isinstance(key, str) for key in value), f"non-string key under {path}"
            return {key: strip(item, f"{path}/{key}") for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [strip(item, f"{path}/{index}") for index, item in enumerate(value)]
        return value

    def restore(value):
        if isinstance(value, dict):
            return tensors[value["__tensor__"]] if "__tensor__" in value else {k: restore(v) for k, v in value.items()}
        if isinstance(value, list):
            return [restore(item) for item in value]
        return value

    return restore(json.loads(json.dumps(strip(state, ""))))


@pytest.mark.parametrize("name", NOVELTY_NAMES)
@pytest.mark.parametrize("spec_name", list(OBS_SPECS))
def test_contract_for_every_module_and_obs_shape(name, spec_name):
    spec = OBS_SPECS[spec_name]
    space = SPACES["box"] if spec_name == "rgb64" else SPACES["discrete"]
    module = build(name, spec, space, seed=0)
    assert isinstance(module, NoveltyModule) and module.name == name
    transitions = rollout(spec, space, steps=3, seed=1)
    with torch.enable_grad():
        reward = rewards(module, transitions).reshape(-1)
    assert reward.shape == (3 * NUM_ENVS,) and reward.dtype == torch.float32 and reward.device.type == "cpu"
    assert not reward.requires_grad
    assert torch.isfinite(reward).all() and (reward >= 0).all()
    if name != "none":
        assert (reward > 0).any()
    metrics = module.update(flat_batch(transitions))
    assert all(key.startswith("novelty/") and isinstance(value, float) for key, value in metrics.items())
    assert (metrics == {}) == (name in ("pixel", "none"))


@pytest.mark.parametrize("name", NOVELTY_NAMES)
@pytest.mark.parametrize("space_name", list(SPACES))
def test_state_dict_round_trip_resumes_exactly(name, space_name):
    spec, space = OBS_SPECS["gray64"], SPACES[space_name]
    original = build(name, spec, space, seed=0)
    history = rollout(spec, space, steps=3, seed=2)
    rewards(original, history)
    original.update(flat_batch(history))

    resumed = build(name, spec, space, seed=123)  # different initial weights
    resumed.load_state_dict(checkpoint_round_trip(original.state_dict()))

    future = rollout(spec, space, steps=2, seed=3)
    assert torch.equal(rewards(resumed, future), rewards(original, future))
    torch.manual_seed(7)
    original_metrics = original.update(flat_batch(future))
    torch.manual_seed(7)
    assert resumed.update(flat_batch(future)) == original_metrics  # same optimizer state, same step
    later = rollout(spec, space, steps=2, seed=4)
    assert torch.equal(rewards(resumed, later), rewards(original, later))


def test_unknown_name_raises():
    spec = OBS_SPECS["gray64"]
    with pytest.raises(ValueError) as error:
        make_novelty("curious", NoveltyConfig(), spec, SPACES["discrete"], NUM_ENVS, "cpu")
    assert str(error.value) == "unknown novelty 'curious'; choose one of pixel, rnd, icm, episodic, none"


def test_config_is_passed_to_the_module():
    config = NoveltyConfig(rnd=RNDConfig(feature_dim=64))
    module = make_novelty("rnd", config, OBS_SPECS["gray64"], SPACES["discrete"], NUM_ENVS, "cpu")
    assert module.target[-1].out_features == 64  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["pixel", "rnd", "icm", "episodic"])
def test_wrong_obs_shape_raises(name):
    module = build(name, OBS_SPECS["gray64"], SPACES["discrete"], seed=0)
    obs = torch.zeros((NUM_ENVS, 4, 84, 84), dtype=torch.uint8)
    with pytest.raises(ValueError, match="built for"):
        module.reward(obs, obs, torch.zeros(NUM_ENVS, dtype=torch.int64), torch.zeros(NUM_ENVS, dtype=torch.bool))


def test_bad_obs_spec_raises():
    with pytest.raises(ValueError, match="channels_per_frame"):
        make_novelty("pixel", NoveltyConfig(), ObsSpec((4, 64, 64), 3), SPACES["discrete"], NUM_ENVS, "cpu")
