"""NGU-style episodic novelty: k-NN kernel by hand, per-env memories, episode ends, capacity wrap."""

from __future__ import annotations

import math

import gymnasium
import pytest
import torch

from wanderlust.novelty.base import NoveltyBatch, ObsSpec
from wanderlust.novelty.episodic import (
    EpisodicConfig, EpisodicNovelty, episodic_novelty, nearest_squared_distances,
)
from wanderlust.runtime.normalize import RunningMeanStd

SPEC = ObsSpec((2, 64, 64), 1)
ACTIONS = gymnasium.spaces.Discrete(3)
INF = float("inf")


def frames(count: int, seed: int) -> torch.Tensor:
    """``count`` distinct random observations ``[count, 2, 64, 64]``."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (count, *SPEC.shape), generator=generator, dtype=torch.uint8)


def make_episodic(num_envs: int, config: EpisodicConfig | None = None) -> EpisodicNovelty:
    torch.manual_seed(0)
    # NGU's module: inverse-dynamics embedding and k-NN kernel (the defaults use the place-oriented options)
    config = config or EpisodicConfig(embedding_loss="inverse", reward_kind="kernel", update_epochs=1)
    return EpisodicNovelty(SPEC, ACTIONS, num_envs, config, "cpu")


def step(module: EpisodicNovelty, obs: torch.Tensor, next_obs: torch.Tensor, ends: list[bool]) -> torch.Tensor:
    actions = torch.zeros(obs.shape[0], dtype=torch.int64)
    return module.reward(obs, next_obs, actions, torch.tensor(ends))


def embed(module: EpisodicNovelty, obs: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return module.embed(obs)


def test_episodic_novelty_by_hand():
    config = EpisodicConfig()
    squared = torch.tensor([[1.0, 4.0, INF]])
    # normalised by mean 2: [0.5, 2.0]; minus xi; inverse kernel; sqrt of the sum plus c
    kernels = [1e-3 / (0.5 - 0.008 + 1e-3), 1e-3 / (2.0 - 0.008 + 1e-3)]
    expected = 1.0 / (math.sqrt(sum(kernels)) + 1e-3)
    assert episodic_novelty(squared, torch.tensor(2.0), config).item() == pytest.approx(expected, rel=1e-5)


def test_episodic_novelty_is_zero_above_max_similarity():
    config = EpisodicConfig()
    known = torch.zeros(2, 64)
    known[1, 63] = INF  # 63 identical neighbours: s = sqrt(63) + c < 8
    reward = episodic_novelty(known, torch.tensor(1.0), config)
    assert reward[0].item() == 0.0  # sqrt(64) + c > 8
    assert reward[1].item() == pytest.approx(1.0 / (math.sqrt(63) + 1e-3), rel=1e-6)


def test_nearest_squared_distances_masks_unfilled_slots():
    memory = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]], [[0.0, 0.0], [5.0, 5.0], [9.0, 9.0]]])
    query = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    distances = nearest_squared_distances(query, memory, torch.tensor([3, 1]), num_neighbors=2)
    assert distances.tolist() == [[1.0, 2.0], [1.0, INF]]
    wrapped = nearest_squared_distances(query, memory, torch.tensor([7, 7]), num_neighbors=5)
    assert wrapped.shape == (2, 3) and torch.isfinite(wrapped).all()


def test_reward_matches_the_formula_on_module_embeddings():
    module = make_episodic(2)
    a, b, c = frames(3, seed=1)
    step(module, torch.stack([a, a]), torch.stack([b, b]), [False, False])
    memory = torch.stack([embed(module, a[None])[0], embed(module, b[None])[0]])
    assert module.counts.tolist() == [2, 2]
    assert torch.allclose(module.memory[:, :2], memory.expand(2, 2, -1), atol=1e-5)

    stats = RunningMeanStd(())
    stats.load_state_dict(module.distance_stats.state_dict())
    query = embed(module, torch.stack([a, c]))
    squared = ((memory[None] - query[:, None]) ** 2).sum(-1).sort(dim=1).values  # [2 envs, 2 neighbours]
    stats.update(squared.reshape(-1).double())
    expected = episodic_novelty(squared, stats.mean.float(), module.config)

    reward = step(module, torch.stack([b, b]), torch.stack([a, c]), [False, False])
    assert torch.allclose(reward, expected, rtol=1e-4)
    assert reward[0] < reward[1]  # a was already seen this episode, c is new


def test_episode_end_clears_memory_and_reseeds_from_the_reset_frame():
    module = make_episodic(2)
    a, b, c, d = frames(4, seed=2)
    step(module, torch.stack([a, a]), torch.stack([b, b]), [False, False])
    step(module, torch.stack([b, b]), torch.stack([c, c]), [True, False])
    assert module.counts.tolist() == [0, 3]
    step(module, torch.stack([d, c]), torch.stack([a, a]), [False, False])
    assert module.counts.tolist() == [2, 4]
    assert torch.allclose(module.memory[0, 0], embed(module, d[None])[0], atol=1e-5)
    assert torch.allclose(module.memory[0, 1], embed(module, a[None])[0], atol=1e-5)


def test_capacity_wrap_overwrites_the_oldest():
    module = make_episodic(1, EpisodicConfig(capacity=3, embedding_loss="inverse", reward_kind="kernel"))
    seq = frames(5, seed=3)
    for t in range(1, 5):
        reward = step(module, seq[t - 1:t], seq[t:t + 1], [False])
        assert torch.isfinite(reward).all() and reward.item() >= 0
    assert module.counts.tolist() == [5]  # start frame + 4 new frames
    expected = embed(module, seq[[3, 4, 2]])  # slots 0, 1 overwritten by frames 3, 4
    assert torch.allclose(module.memory[0], expected, atol=1e-5)


def test_envs_memories_are_independent():
    first, second = make_episodic(2), make_episodic(2)
    x, y = frames(4, seed=4), frames(4, seed=5)
    other = frames(4, seed=6)
    for t in range(1, 4):
        step(first, torch.stack([x[t - 1], y[t - 1]]), torch.stack([x[t], y[t]]), [False, t == 2])
        step(second, torch.stack([other[t - 1], y[t - 1]]), torch.stack([other[t], y[t]]), [t == 1, t == 2])
    assert torch.allclose(first.memory[1], second.memory[1], atol=1e-6) and first.counts[1] == second.counts[1]
    assert not torch.equal(first.memory[0], second.memory[0])


def test_update_trains_the_embedding_by_inverse_dynamics():
    module = make_episodic(1, EpisodicConfig(update_epochs=4, minibatch_size=16, embedding_loss="inverse", reward_kind="kernel"))
    obs, next_obs = frames(16, seed=7), frames(16, seed=8)
    actions = torch.arange(16) % 3
    with torch.no_grad():
        before = module.inverse_loss(obs, next_obs, actions).mean().item()
    for _ in range(3):
        metrics = module.update(NoveltyBatch(obs, next_obs, actions))
    assert set(metrics) == {"novelty/episodic_inverse_loss"}
    with torch.no_grad():
        after = module.inverse_loss(obs, next_obs, actions).mean().item()
    assert after < 0.5 * before


def test_wrong_batch_size_raises():
    module = make_episodic(2)
    a = frames(1, seed=9)
    with pytest.raises(ValueError, match="num_envs"):
        step(module, a, a, [False])
