"""Episodic novelty's place-oriented options: the pseudo-count reward and the temporal contrastive embedding."""

from __future__ import annotations

import gymnasium
import pytest
import torch

from wanderlust.novelty.base import NoveltyBatch, ObsSpec
from wanderlust.novelty.episodic import (
    EpisodicConfig, EpisodicNovelty, episodic_count_reward, info_nce, landmark_reward, near_in_time, temporal_pairs,
)

SPEC = ObsSpec((2, 40, 40), 1)
ACTIONS = gymnasium.spaces.Discrete(3)
INF = float("inf")


def make(num_envs: int, **fields) -> EpisodicNovelty:
    torch.manual_seed(0)
    return EpisodicNovelty(SPEC, ACTIONS, num_envs, EpisodicConfig(**fields), "cpu")


def test_count_reward_by_hand():
    distances = torch.tensor([[0.1, 0.5, 2.0, INF], [INF, INF, INF, INF], [0.0, 0.0, 0.2, 0.9]])
    reward = episodic_count_reward(distances, torch.tensor(0.6))
    expected = torch.tensor([1 / 3 ** 0.5, 1.0, 1 / 2.0])  # 2 within 0.6; none; 3 within 0.6
    assert torch.allclose(reward, expected)


def test_landmark_reward_by_hand():
    distances = torch.tensor([[0.7, 0.5, INF], [INF, INF, INF], [0.2, 3.0, 0.9], [0.6, 0.6, INF]])
    reward = landmark_reward(distances, torch.tensor(0.6))
    assert reward.tolist() == [0.0, 1.0, 0.0, 1.0]  # 0.5 < 0.6; no landmark yet; 0.2 < 0.6; all >= 0.6


def test_landmark_reward_pays_once_per_place_and_keeps_only_landmarks():
    # the scale is the mean step distance between consecutive frames; radius 0.5 of it: distinct
    # random frames are always new landmarks, a frame seen before never is
    module = make(2, reward_kind="landmark", embedding_loss="temporal", landmark_radius=0.5)
    generator = torch.Generator().manual_seed(0)
    a, b, c = (torch.randint(0, 256, (1, *SPEC.shape), generator=generator, dtype=torch.uint8) for _ in range(3))
    pair = lambda x, y: torch.cat([x, y])  # noqa: E731 - env 0's frame, env 1's frame
    no_end = torch.tensor([False, False])
    actions = torch.zeros(2, dtype=torch.int64)
    rewards = [module.reward(pair(a, a), pair(b, a), actions, no_end).tolist()]  # env 0: a -> b; env 1 stays on a
    with torch.no_grad():
        first_step = float((module.embed(b) - module.embed(a)).norm())
    assert float(module.step_mean) == pytest.approx(first_step / 2, rel=1e-5)  # mean of env 0's step and env 1's 0
    rewards.append(module.reward(pair(b, a), pair(c, a), actions, no_end).tolist())
    rewards.append(module.reward(pair(c, a), pair(b, b), actions, no_end).tolist())  # env 0 back at b; env 1 sees b
    assert rewards == [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]
    assert module.counts.tolist() == [3, 2]  # landmarks only: env 0 {a, b, c}, env 1 {a, b}
    with torch.no_grad():
        assert torch.allclose(module.previous, module.embed(pair(b, b)))
    ended = module.reward(pair(b, b), pair(c, c), actions, torch.tensor([True, False]))
    assert ended.tolist() == [0.0, 1.0] and module.counts.tolist() == [0, 3]  # env 0's memory forgotten
    other = make(2, reward_kind="landmark")
    other.load_state_dict(module.state_dict())
    assert float(other.step_mean) == float(module.step_mean) and torch.equal(other.previous, module.previous)


def test_default_landmark_reward_pays_nothing_for_noise():
    # a screen of fresh noise every step changes as much from one step to the next as from any
    # earlier frame, so nothing is ever 3 mean steps from the memory: a noisy TV earns nothing
    module = make(2)
    assert module.config.reward_kind == "landmark" and module.config.landmark_radius == 3.0
    frames = torch.randint(0, 256, (30, 2, *SPEC.shape), generator=torch.Generator().manual_seed(5), dtype=torch.uint8)
    no_end, actions = torch.tensor([False, False]), torch.zeros(2, dtype=torch.int64)
    paid = sum(float(module.reward(frames[t], frames[t + 1], actions, no_end).sum()) for t in range(29))
    assert paid == 0.0 and module.counts.tolist() == [1, 1]  # only the start frames are landmarks
    assert float(module.step_mean) > 0


def test_temporal_pairs_stay_inside_one_episode_and_window():
    T, N = 40, 3
    ends = torch.zeros(T, N, dtype=torch.bool)
    ends[10, 0] = ends[25, 1] = True  # env 0's episode ends with step 10, env 1's with step 25
    first, second, env = temporal_pairs(ends, window=6, size=4000, generator=torch.Generator().manual_seed(1))
    assert first.numel() > 1000
    gap = second - first
    assert int(gap.min()) >= 1 and int(gap.max()) <= 6 and int(second.max()) <= T - 1
    for t, u, n in zip(first.tolist(), second.tolist(), env.tolist()):
        assert not ends[t:u, n].any(), (t, u, n)  # no episode end between the two frames
    # pairs that straddle env 0's end at step 10 were dropped, pairs on both sides kept
    on_env0 = env == 0
    assert ((first[on_env0] <= 10) & (second[on_env0] > 10)).sum() == 0
    assert (second[on_env0] <= 10).any() and (first[on_env0] > 10).any()


def test_info_nce_prefers_matching_rows():
    anchor = torch.nn.functional.normalize(torch.eye(4) + 0.01, dim=1)
    matched = info_nce(anchor, anchor, temperature=0.1)
    shuffled = info_nce(anchor, anchor.roll(1, dims=0), temperature=0.1)
    assert float(matched) < 0.01 < float(shuffled)


def test_count_reward_pays_less_for_revisits():
    # radius 0.5 x the mean nearest distance: distinct random frames never count, repeats always do
    module = make(1, reward_kind="count", embedding_loss="temporal", count_radius=0.5)
    generator = torch.Generator().manual_seed(0)
    a, b, c = (torch.randint(0, 256, (1, *SPEC.shape), generator=generator, dtype=torch.uint8) for _ in range(3))
    no_end = torch.tensor([False])
    actions = torch.zeros(1, dtype=torch.int64)
    first = module.reward(a, b, actions, no_end)  # memory: a (start frame); b is new
    module.reward(b, c, actions, no_end)
    again = [float(module.reward(c, b, actions, no_end)) for _ in range(3)]  # b seen again and again
    assert float(first) == 1.0  # memory holds only the start frame a, far from b
    assert again == pytest.approx([1 / 2 ** 0.5, 1 / 3 ** 0.5, 1 / 2])  # b stored 1, 2, 3 times before
    assert float(module.nearest_mean) > 0


def test_temporal_update_trains_embedding_and_needs_time_order():
    module = make(2, embedding_loss="temporal", minibatch_size=32, temporal_window=3)
    T, N = 16, 2
    generator = torch.Generator().manual_seed(2)
    next_obs = torch.randint(0, 256, (T * N, *SPEC.shape), generator=generator, dtype=torch.uint8)
    ends = torch.zeros(T * N, dtype=torch.bool)
    before = [p.detach().clone() for p in module.embedding.parameters()]
    metrics = module.update(NoveltyBatch(next_obs, next_obs, torch.zeros(T * N, dtype=torch.int64), ends, N))
    assert metrics["novelty/episodic_temporal_loss"] > 0
    assert any(not torch.equal(b, p) for b, p in zip(before, module.embedding.parameters()))
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in module.embedding.parameters())
    with torch.no_grad():
        assert torch.allclose(module.embed(next_obs[:4]).norm(dim=1), torch.ones(4))
    with pytest.raises(ValueError, match="time-ordered rollout"):
        module.update(NoveltyBatch(next_obs, next_obs, torch.zeros(T * N, dtype=torch.int64)))


def test_bad_options_are_one_line_errors():
    with pytest.raises(ValueError, match="embedding_loss must be one of inverse, temporal"):
        make(1, embedding_loss="contrastive")
    with pytest.raises(ValueError, match="reward_kind must be one of kernel, count, landmark"):
        make(1, reward_kind="counts")
    with pytest.raises(ValueError, match="distance_decay"):
        make(1, distance_decay=1.0)


def test_count_state_round_trips():
    module = make(1, reward_kind="count")
    module.nearest_mean = torch.tensor(0.25, dtype=torch.float64)
    other = make(1, reward_kind="count")
    other.load_state_dict(module.state_dict())
    assert float(other.nearest_mean) == 0.25


def test_near_in_time_masks_same_env_neighbours_only():
    first, second, env = torch.tensor([0, 5, 100, 3]), torch.tensor([2, 9, 104, 6]), torch.tensor([0, 0, 0, 1])
    ignore = near_in_time(first, second, env, horizon=10)
    expected = torch.zeros(4, 4, dtype=torch.bool)
    expected[0, 1] = expected[1, 0] = True  # env 0, steps 0 / 9 and 5 / 2: same place, not negatives
    assert torch.equal(ignore, expected)  # step 100 is far; env 1 is another maze; diagonal kept
    anchor = torch.nn.functional.normalize(torch.randn(4, 8, generator=torch.Generator().manual_seed(0)), dim=1)
    masked = info_nce(anchor, anchor, 0.5, ignore)
    assert float(masked) < float(info_nce(anchor, anchor, 0.5))  # fewer negatives, lower loss
