"""Report data: curve groups, visit counts, novelty ranking, frame strips, TensorBoard images."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import torch
from matplotlib import colormaps
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.conftest import tiny_config
from wanderlust.algo.storage import RolloutStorage
from wanderlust.algo.trainer import Learner, collect_rollout
from wanderlust.envs.factory import make_vector_env, obs_spec
from wanderlust.report.data import (
    UNVISITED_RGB,
    VisitCounter,
    agent_view,
    curve_groups,
    finite_series,
    frame_strip,
    heatmap_rgb,
    rank_novelty,
    sample_indices,
    stack_rows,
    upscale,
    visit_counts,
)
from wanderlust.report.tb_images import HEATMAP_TAG, NOVEL_FRAMES_TAG, log_run_images, novel_frames_image
from wanderlust.runtime.logger import MetricLogger

ROWS = [
    {"step": 32, "time": 1.0, "charts/SPS": 100.0, "novelty/rnd_loss": 2.0, "losses/policy_loss": 0.5,
     "losses/minibatch_updates": 4.0, "charts/coverage": math.nan},
    {"step": 64, "time": 2.0, "charts/SPS": 120.0, "novelty/reward_raw_mean": 1.5, "losses/policy_loss": 0.25,
     "losses/minibatch_updates": 4.0},
    {"step": 96, "time": 3.0, "charts/SPS": math.inf, "novelty/rnd_loss": 1.0, "charts/episodic_return": 0.0,
     "charts/learning_rate": 1e-4},
]


def test_finite_series_keeps_only_present_finite_values():
    steps, values = finite_series(ROWS, "charts/SPS")
    assert steps.tolist() == [32, 64] and values.tolist() == [100.0, 120.0]  # inf at 96 dropped
    steps, values = finite_series(ROWS, "novelty/rnd_loss")
    assert steps.tolist() == [32, 96] and values.tolist() == [2.0, 1.0]  # absent at 64
    assert len(finite_series(ROWS, "charts/coverage")[0]) == 0  # only NaN


def test_curve_groups_sort_metrics_into_the_report_plots():
    groups = {group.title: group for group in curve_groups(ROWS)}
    assert list(groups) == ["Coverage", "Returns", "Novelty", "Losses", "Speed", "Other charts"]
    assert groups["Coverage"].series == {}  # logged, but never finite
    assert list(groups["Other charts"].series) == ["charts/learning_rate"]  # not the ones placed above
    assert list(groups["Returns"].series) == ["charts/episodic_return"]
    assert list(groups["Novelty"].series) == ["novelty/reward_raw_mean", "novelty/rnd_loss"]
    assert list(groups["Losses"].series) == ["losses/policy_loss"]  # the minibatch counter is not a curve
    assert groups["Losses"].points == 2 and groups["Novelty"].points == 3 and groups["Speed"].points == 2


def test_visit_counts_count_steps_per_cell():
    counts = visit_counts(np.array([[0, 0], [0, 0], [1, 2], [0, 0]]), 3)
    expected = np.zeros((3, 3), dtype=np.int64)
    expected[0, 0], expected[1, 2] = 3, 1
    np.testing.assert_array_equal(counts, expected)
    with pytest.raises(ValueError, match="must lie in"):
        visit_counts(np.array([[0, 3]]), 3)


def test_visit_counter_skips_masked_envs_and_resets():
    counter = VisitCounter(4)
    counter.observe({"cell": np.array([[1, 1], [2, 3]]), "_cell": np.array([True, False])})
    counter.observe({"cell": np.array([[1, 1], [0, 0]])})
    counter.observe({"episode": {}})  # not a maze: ignored
    assert counter.counts[1, 1] == 2 and counter.counts[0, 0] == 1 and counter.counts.sum() == 3
    counter.reset()
    assert counter.counts.sum() == 0


def test_visit_counter_reads_the_cells_of_a_real_vector_env():
    config = tiny_config(env__max_episode_steps=3)
    envs = make_vector_env(config.env)
    counter = VisitCounter(config.env.maze_size)
    _, infos = envs.reset(seed=0)
    counter.observe(infos)
    for _ in range(5):  # crosses an episode end (same-step autoreset)
        _, _, _, _, infos = envs.step(np.zeros((2, 4), dtype=np.float32))
        counter.observe(infos)
    envs.close()
    assert counter.counts.sum() == 2 * 6  # every env, every step, reset included


def test_rank_novelty_orders_by_score_with_ties_in_time_order_and_never_repeats():
    most, least = rank_novelty(np.array([0.5, 3.0, 1.0, 3.0, 0.0]), 2)
    assert most.tolist() == [1, 3] and least.tolist() == [4, 0]
    most, least = rank_novelty(np.array([0.5, 3.0, 1.0, 3.0, 0.0]), 3)  # 5 scores: 3 + 2, no overlap
    assert most.tolist() == [1, 3, 2] and least.tolist() == [4, 0]
    scores = np.array([9.0, 8.5, 8.0, 1.0, 7.0, 0.5, 0.0])
    most, least = rank_novelty(scores, 2, min_separation=3)  # 1 and 2 are too close to 0; 4 is not
    assert most.tolist() == [0, 4] and least.tolist() == [6, 3]
    most, least = rank_novelty(np.array([7.0]), 4)
    assert most.tolist() == [0] and least.tolist() == []
    with pytest.raises(ValueError, match="NaN"):
        rank_novelty(np.array([1.0, math.nan]), 1)


def test_agent_view_takes_the_newest_frame_of_the_stack():
    gray = np.zeros((2, 3, 4, 5), dtype=np.uint8)  # [T=2, C=3 stacked gray frames, H, W]
    gray[:, 2] = 200
    view = agent_view(gray, 1)
    assert view.shape == (2, 4, 5, 3) and (view == 200).all()
    rgb = np.zeros((6, 4, 5), dtype=np.uint8)  # two stacked RGB frames; the newest is channels 3..5
    rgb[3], rgb[4], rgb[5] = 10, 20, 30
    assert agent_view(rgb, 3)[0, 0].tolist() == [10, 20, 30]
    with pytest.raises(ValueError):
        agent_view(np.zeros((4, 5, 5), dtype=np.uint8), 3)  # 4 channels are not RGB frames


def test_strips_and_rows_lay_frames_out_with_gaps():
    frames = np.stack([np.full((2, 2, 3), 10, np.uint8), np.full((2, 2, 3), 20, np.uint8)])
    strip = frame_strip(frames, gap=1, fill=255)
    assert strip.shape == (2, 5, 3)
    assert (strip[:, :2] == 10).all() and (strip[:, 2] == 255).all() and (strip[:, 3:] == 20).all()
    stacked = stack_rows([strip, np.zeros((3, 2, 3), np.uint8)], gap=2)
    assert stacked.shape == (2 + 2 + 3, 5, 3)
    assert (stacked[4:, 2:] == 255).all() and (stacked[4:, :2] == 0).all()  # narrow row padded white
    assert upscale(np.arange(4).reshape(2, 2), 2).tolist() == [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]]


def test_heatmap_colours_visits_on_a_log_scale_and_greys_unvisited_cells():
    counts = np.array([[0, 1], [3, 0]])
    image = heatmap_rgb(counts, cell_pixels=3)
    assert image.shape == (6, 6, 3) and image.dtype == np.uint8
    assert image[0, 0].tolist() == list(UNVISITED_RGB)
    top = np.round(np.array(colormaps["viridis"](1.0)[:3]) * 255).astype(int).tolist()
    middle = np.round(np.array(colormaps["viridis"](np.log(2) / np.log(4))[:3]) * 255).astype(int).tolist()
    assert image[5, 0].tolist() == top  # the most visited cell
    assert image[0, 5].tolist() == middle  # log(1 + 1) / log(1 + 3)


def test_sample_indices_keep_first_and_last():
    assert sample_indices(10, 4).tolist() == [0, 3, 6, 9]
    assert sample_indices(3, 5).tolist() == [0, 1, 2]
    assert sample_indices(7, 1).tolist() == [6]


def test_novel_frames_image_puts_the_most_novel_frame_on_top():
    next_obs = torch.arange(4, dtype=torch.uint8).reshape(2, 2, 1, 1, 1).expand(2, 2, 1, 2, 2) * 50  # [T, N, C, H, W]
    raw = torch.tensor([[0.1, 0.9], [0.5, 0.0]])  # frame 1 (value 50) most novel, frame 3 (150) least
    image = novel_frames_image(next_obs, raw, channels_per_frame=1, k=1, scale=3)
    assert image.shape == (6 + 2 + 6, 6, 3)  # 2x2 frames upscaled 3 times, a 2-pixel gap between rows
    assert (image[:6] == 50).all() and (image[6:8] == 255).all() and (image[8:] == 150).all()
    with pytest.raises(ValueError, match="matching"):
        novel_frames_image(next_obs, raw[:1], 1)


def test_log_run_images_writes_both_tags_to_tensorboard(tmp_path):
    counts = np.array([[5, 0, 1], [0, 2, 0], [0, 0, 9]])
    frames = np.zeros((6, 10, 3), dtype=np.uint8)
    with MetricLogger(tmp_path) as logger:
        assert log_run_images(logger, 64, counts, frames) == [HEATMAP_TAG, NOVEL_FRAMES_TAG]
        assert log_run_images(logger, 128, None, frames) == [NOVEL_FRAMES_TAG]
        with pytest.raises(ValueError, match=r"\[H, W, 3\] uint8"):
            logger.log_image(128, "images/bad", np.zeros((4, 4), dtype=np.float32))
    accumulator = EventAccumulator(str(tmp_path / "tb"), size_guidance={"images": 0})
    accumulator.Reload()
    assert {HEATMAP_TAG, NOVEL_FRAMES_TAG} <= set(accumulator.Tags()["images"])
    heatmap = accumulator.Images(HEATMAP_TAG)
    assert [event.step for event in heatmap] == [64]
    decoded = np.asarray(Image.open(io.BytesIO(heatmap[0].encoded_image_string)).convert("RGB"))
    assert decoded.shape == (255, 255, 3)  # 256 // 3 = 85 pixels per cell
    assert decoded[0, 100].tolist() == list(UNVISITED_RGB)  # cell (0, 1) never visited
    assert [event.step for event in accumulator.Images(NOVEL_FRAMES_TAG)] == [64, 128]


def test_images_from_a_real_rollout_as_the_trainer_wires_them(tmp_path):
    config = tiny_config(novelty_name="pixel")
    envs = make_vector_env(config.env)
    learner = Learner(config, envs.single_observation_space, envs.single_action_space, torch.device("cpu"))
    storage = RolloutStorage(16, 2, envs.single_observation_space.shape, envs.single_action_space, torch.device("cpu"))
    visits = VisitCounter(config.env.maze_size)
    obs, infos = envs.reset(seed=0)
    _, raw_intrinsic = collect_rollout(envs, learner, storage, obs, on_step=visits.observe)
    envs.close()
    channels = obs_spec(envs.single_observation_space, config.env).channels_per_frame
    frames = novel_frames_image(storage.next_obs, raw_intrinsic, channels, k=4)
    with MetricLogger(tmp_path) as logger:
        assert log_run_images(logger, 32, visits.counts, frames) == [HEATMAP_TAG, NOVEL_FRAMES_TAG]
    assert visits.counts.sum() == 32 and frames.shape == (2 * 40 + 2 + 2 * 40, 4 * 80 + 3 * 2, 3)
    best = int(raw_intrinsic.reshape(-1).argmax())
    newest = storage.next_obs.reshape(32, -1, 40, 40)[best, -3:].permute(1, 2, 0).numpy()
    np.testing.assert_array_equal(frames[:80:2, :80:2], newest)  # top-left: the most novel frame, upscaled



def test_training_logs_images_every_image_every_updates(tmp_path):
    from wanderlust.algo.trainer import train

    config = tiny_config(image_every=2, novelty_name="episodic")  # 64 steps = 2 updates of 2 envs x 16
    config.total_steps = 96  # 3 updates: images after update 2 and after the last one
    train(config, tmp_path, show_progress=False)
    accumulator = EventAccumulator(str(tmp_path / "tb"), size_guidance={"images": 0})
    accumulator.Reload()
    assert [event.step for event in accumulator.Images(HEATMAP_TAG)] == [64, 96]
    assert [event.step for event in accumulator.Images(NOVEL_FRAMES_TAG)] == [64, 96]
    heatmap = np.asarray(Image.open(io.BytesIO(accumulator.Images(HEATMAP_TAG)[0].encoded_image_string)))
    assert len(np.unique(heatmap.reshape(-1, heatmap.shape[-1]), axis=0)) > 2  # visited cells are coloured

    quiet = tmp_path / "quiet"
    quiet.mkdir()
    train(tiny_config(image_every=0), quiet, show_progress=False)
    accumulator = EventAccumulator(str(quiet / "tb"), size_guidance={"images": 0})
    accumulator.Reload()
    assert accumulator.Tags()["images"] == []
