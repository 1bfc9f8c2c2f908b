"""Pixel novelty against hand computations on tiny frames (2 envs, 4x4 frames, K = 3)."""

from __future__ import annotations

import pytest
import torch

from wanderlust.novelty.base import ObsSpec
from wanderlust.novelty.pixel import PixelConfig, PixelNovelty, gray_frames, history_mask, mean_abs_difference

H = W = 4
STALE = 255  # value of the older stacked frame: must never influence the reward


def stacked(*newest_values: float | torch.Tensor) -> torch.Tensor:
    """One uint8 obs per env: frame stack of 2 gray 4x4 frames, the older one STALE, the newest as given."""
    obs = torch.full((len(newest_values), 2, H, W), STALE, dtype=torch.uint8)
    for env, value in enumerate(newest_values):
        obs[env, 1] = torch.as_tensor(value, dtype=torch.uint8)
    return obs


def make_pixel(history: int = 3, num_envs: int = 2) -> PixelNovelty:
    return PixelNovelty(ObsSpec((2, H, W), 1), num_envs, PixelConfig(history=history), "cpu")


def step(module: PixelNovelty, obs: torch.Tensor, next_obs: torch.Tensor, ends: tuple[bool, ...]) -> list[float]:
    no_actions = torch.zeros(obs.shape[0], dtype=torch.int64)
    reward = module.reward(obs, next_obs, no_actions, torch.tensor(ends))
    assert reward.dtype == torch.float32 and reward.shape == (obs.shape[0],)
    return reward.tolist()


def test_mean_abs_difference_by_hand():
    frame = torch.arange(16, dtype=torch.float32).reshape(1, 4, 4) * 10  # mean 75
    history = torch.zeros(1, 3, 4, 4)
    history[0, 1] = 150.0  # |x - 150| over 0..150 step 10 -> mean 75
    history[0, 2] = 99.0  # must be ignored: slot not filled
    filled = torch.tensor([[True, True, False]])
    expected = (75.0 + 75.0) / 2 / 255
    assert mean_abs_difference(frame, history, filled).item() == pytest.approx(expected, abs=1e-7)
    assert mean_abs_difference(frame, history, torch.zeros(1, 3, dtype=torch.bool)).item() == 0.0


def test_history_mask_caps_at_capacity():
    mask = history_mask(torch.tensor([0, 2, 7]), 3)
    assert mask.tolist() == [[False, False, False], [True, True, False], [True, True, True]]


def test_rewards_sequence_ordering_eviction_and_independence():
    module = make_pixel(history=3)
    # env 0: start 0, then 10, 20, 30, 40, 40; env 1: start 100, then 100, 200, 200, ...
    assert step(module, stacked(0, 100), stacked(10, 100), (False, False)) == pytest.approx([10 / 255, 0.0])
    # env 0 history {0, 10}; env 1 {100, 100}
    assert step(module, stacked(10, 100), stacked(20, 200), (False, False)) == pytest.approx([15 / 255, 100 / 255])
    # env 0 history {0, 10, 20}; env 1 {100, 100, 200}
    assert step(module, stacked(20, 200), stacked(30, 200), (False, False)) == pytest.approx(
        [20 / 255, (100 + 100 + 0) / 3 / 255])
    # env 0: 0 was evicted -> {10, 20, 30} (all four frames would give 25/255)
    assert step(module, stacked(30, 200), stacked(40, 200), (False, False)) == pytest.approx(
        [20 / 255, (100 + 0 + 0) / 3 / 255])
    # env 0: {20, 30, 40}; the new 40 is compared before it joins (a history holding it twice gives 10/3)
    assert step(module, stacked(40, 200), stacked(40, 200), (False, False)) == pytest.approx(
        [(20 + 10 + 0) / 3 / 255, 0.0])


def test_first_transition_compares_against_start_frame_not_itself():
    module = make_pixel(history=3, num_envs=1)
    assert step(module, stacked(50), stacked(80), (False,)) == pytest.approx([30 / 255])
    assert module.counts.tolist() == [2]  # start frame + new frame


def test_episode_end_clears_only_that_env_after_the_reward():
    module = make_pixel(history=3)
    step(module, stacked(0, 0), stacked(60, 60), (False, False))
    # env 1's episode ends: its reward still uses its history ({0, 60})
    assert step(module, stacked(60, 60), stacked(90, 90), (False, True)) == pytest.approx(
        [(90 + 30) / 2 / 255, (90 + 30) / 2 / 255])
    assert module.counts.tolist() == [3, 0]
    # env 1 restarts from a reset frame 200: compared only with it; env 0 keeps {0, 60, 90}
    assert step(module, stacked(90, 200), stacked(90, 210), (False, False)) == pytest.approx(
        [(90 + 30 + 0) / 3 / 255, 10 / 255])


def test_rgb_uses_rounded_luma_of_the_newest_frame():
    spec = ObsSpec((6, H, W), 3)  # 2 stacked RGB frames
    module = PixelNovelty(spec, 1, PixelConfig(history=3), "cpu")
    obs = torch.zeros(1, 6, H, W, dtype=torch.uint8)
    next_obs = torch.zeros(1, 6, H, W, dtype=torch.uint8)
    next_obs[0, :3] = 255  # older frame: ignored
    next_obs[0, 3], next_obs[0, 4], next_obs[0, 5] = 100, 50, 200  # luma 82.05 -> 82 (PIL gives 82 too)
    assert gray_frames(next_obs, 3)[0, 0, 0].item() == 82
    reward = module.reward(obs, next_obs, torch.zeros(1), torch.tensor([False]))
    assert reward.item() == pytest.approx(82 / 255, abs=1e-7)


def test_reward_is_computed_without_grad_and_update_is_empty():
    module = make_pixel()
    with torch.enable_grad():
        reward = module.reward(stacked(0, 0), stacked(1, 2), torch.zeros(2), torch.tensor([False, False]))
    assert not reward.requires_grad
    assert module.update(None) == {}  # type: ignore[arg-type]


def test_state_dict_round_trip_keeps_history():
    module = make_pixel()
    step(module, stacked(0, 0), stacked(60, 30), (False, False))
    state = module.state_dict()
    assert state["frames"].dtype == torch.uint8
    fresh = make_pixel()
    fresh.load_state_dict(state)
    args = (stacked(60, 30), stacked(120, 90), torch.zeros(2), torch.tensor([False, False]))
    assert torch.equal(fresh.reward(*args), module.reward(*args))


def test_bad_inputs_raise_clear_errors():
    module = make_pixel()
    with pytest.raises(ValueError, match="num_envs"):
        module.reward(stacked(0), stacked(0), torch.zeros(1), torch.tensor([False]))
    with pytest.raises(ValueError, match="uint8"):
        module.reward(stacked(0, 0).float(), stacked(0, 0), torch.zeros(2), torch.tensor([False, False]))
    with pytest.raises(ValueError, match="episode_ends"):
        module.reward(stacked(0, 0), stacked(0, 0), torch.zeros(2), torch.tensor([False]))
    with pytest.raises(ValueError, match="history"):
        PixelNovelty(ObsSpec((2, H, W), 1), 2, PixelConfig(history=0), "cpu")


def test_nearest_aggregate_takes_the_closest_filled_frame_by_hand():
    frame = torch.full((2, 4, 4), 100.0)
    history = torch.zeros(2, 3, 4, 4)
    history[:, 0], history[:, 1], history[:, 2] = 40.0, 90.0, 100.0  # slot 2 of env 0 is not filled
    filled = torch.tensor([[True, True, False], [True, True, True]])
    got = mean_abs_difference(frame, history, filled, aggregate="nearest")
    assert got.tolist() == pytest.approx([10 / 255, 0.0])
    mean = mean_abs_difference(frame, history, filled)
    assert mean.tolist() == pytest.approx([(60 + 10) / 2 / 255, (60 + 10 + 0) / 3 / 255])
    assert mean_abs_difference(frame, history, torch.zeros(2, 3, dtype=torch.bool), "nearest").tolist() == [0.0, 0.0]


def test_nearest_pays_nothing_for_a_view_seen_this_episode():
    module = PixelNovelty(ObsSpec((2, H, W), 1), 1, PixelConfig(history=5, aggregate="nearest"), "cpu")
    assert step(module, stacked(0), stacked(30), (False,)) == pytest.approx([30 / 255])
    assert step(module, stacked(30), stacked(0), (False,)) == pytest.approx([0.0])  # back to the start view
    assert step(module, stacked(0), stacked(40), (False,)) == pytest.approx([10 / 255])


def test_unknown_aggregate_is_a_clear_error():
    with pytest.raises(ValueError, match="novelty.pixel.aggregate must be one of mean, nearest"):
        PixelNovelty(ObsSpec((2, H, W), 1), 1, PixelConfig(aggregate="median"), "cpu")
