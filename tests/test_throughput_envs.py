"""benchmarks/throughput.py on VizDoom and Atari: both implementations get the same env, frames and network size."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import throughput  # noqa: E402

VIZDOOM = throughput.EnvChoice("VizdoomMyWayHome-v1", num_envs=2)
ATARI = throughput.EnvChoice("ALE/MontezumaRevenge-v5", num_envs=2)


def test_env_choices_take_the_family_presets_preprocessing():
    doom = throughput.env_config(VIZDOOM)
    assert (doom.env_id, doom.num_envs, doom.vizdoom_resolution) == ("VizdoomMyWayHome-v1", 2, "160x120")
    assert (doom.action_repeat, doom.frame_size, doom.grayscale, doom.frame_stack) == (4, 42, True, 4)
    atari = throughput.env_config(ATARI)
    assert (atari.atari_preprocessing, atari.action_repeat, atari.frame_size, atari.grayscale, atari.frame_stack) == (
        True, 4, 84, True, 4)
    assert atari.vizdoom_resolution is None
    maze = throughput.env_config(throughput.EnvChoice())
    assert (maze.env_id, maze.frame_size, maze.grayscale, maze.num_envs) == ("wanderlust/Maze-v0", None, False, 8)
    grid = throughput.env_config(throughput.EnvChoice("MiniGrid-DoorKey-8x8-v0", 4, frame_size=48))
    assert (grid.frame_stack, grid.grayscale, grid.frame_size, grid.num_envs) == (1, False, 48, 4)


def test_describe_names_the_render_size_and_the_input():
    assert throughput.describe(throughput.env_config(VIZDOOM)) == (
        "VizdoomMyWayHome-v1, rendered 160x120, action repeat 4, resized 42x42, grayscale, frame stack 4")
    assert throughput.describe(throughput.env_config(throughput.EnvChoice())) == (
        "wanderlust/Maze-v0, 64x64, RGB, frame stack 4")


def test_env_arguments_and_the_worker_command_carry_the_same_env():
    args = throughput.parse_args(["--env", "vizdoom", "--num-envs", "4", "--steps", "1024"])
    assert args.choice == throughput.EnvChoice("VizdoomMyWayHome-v1", 4, None)
    args = throughput.parse_args(["--env", "vizdoom", "--env-id", "ALE/Breakout-v5", "--frame-size", "64"])
    assert args.choice == throughput.EnvChoice("ALE/Breakout-v5", 8, 64)
    command = throughput.worker_command("rnd", 4096, 3, 1, args.choice, profile=True)
    worker_args = throughput.parse_args(command[2:])
    assert (worker_args.worker, worker_args.choice, worker_args.steps, worker_args.seed) == ("rnd", args.choice, 4096, 3)
    assert worker_args.profile_worker
    with pytest.raises(SystemExit):  # two updates of 4 x 128 are 1,024 steps
        throughput.parse_args(["--num-envs", "4", "--steps", "1000"])
    with pytest.raises(SystemExit):
        throughput.parse_args(["--env", "doom"])
    with pytest.raises(SystemExit):
        throughput.parse_args(["--frame-size", "16"])


@pytest.mark.parametrize("choice", [VIZDOOM, ATARI], ids=["vizdoom", "atari"])
def test_sb3_sees_the_frames_wanderlust_sees_with_a_network_of_the_same_size(choice):
    from stable_baselines3.common.vec_env import DummyVecEnv

    from wanderlust.agent.actor_critic import ActorCritic
    from wanderlust.envs.factory import make_env, make_vector_env

    config = throughput.base_config(2048, 5, 1, "none", choice)
    ours = make_vector_env(config.env)
    sb3_envs = DummyVecEnv([lambda: make_env(config.env) for _ in range(config.env.num_envs)])
    try:
        frames, _ = ours.reset(seed=11)
        sb3_envs.seed(11)  # env i gets seed 11 + i, as in Gymnasium's vector reset
        sb3_frames = sb3_envs.reset()
        assert frames.shape == (2, 4, *(2 * (config.env.frame_size,)))
        np.testing.assert_array_equal(sb3_frames, frames)
        model = throughput.sb3_model(config, sb3_envs)
        assert model.policy.observation_space == ours.single_observation_space
        agent = ActorCritic(ours.single_observation_space.shape, ours.single_action_space, encoder=config.encoder)
        sb3_parameters = sum(p.numel() for p in model.policy.parameters())
        # The same Nature CNN and heads; wanderlust adds a second (intrinsic) value head: 512 weights + 1 bias.
        assert sum(p.numel() for p in agent.parameters()) - sb3_parameters == 513
    finally:
        ours.close()
        sb3_envs.close()


def test_both_rows_train_on_vizdoom_and_report_the_observation_shape():
    choice = throughput.EnvChoice("VizdoomMyWayHome-v1", num_envs=1)
    sb3 = throughput.run_sb3(256, 1, 1, choice)
    ours = throughput.run_wanderlust("none", 256, 1, 1, choice)
    for measurement in (sb3, ours):
        assert measurement.obs_shape == [4, 42, 42]
        assert (measurement.total_steps, measurement.timed_steps) == (256, 128)  # 2 updates, the first untimed
        assert 0 < measurement.timed_seconds < measurement.total_seconds
    assert ours.parameters - sb3.parameters == 513
