"""Config validation and round trip; env factory preprocessing and errors."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import COUNT_ENV_ID
from wanderlust.envs.factory import UnknownEnvError, ensure_registered, make_env, make_vector_env, obs_spec
from wanderlust.runtime.config import EnvConfig, TrainConfig, make_preset, set_by_path


def test_config_round_trips_through_a_dict():
    config = make_preset("quick")
    set_by_path(config, "ppo.learning_rate", "1e-3")
    set_by_path(config, "novelty_name", "icm")
    set_by_path(config, "env.max_episode_steps", "50")
    again = TrainConfig.from_dict(config.to_dict())
    assert again == config
    assert again.ppo.learning_rate == 1e-3 and again.env.max_episode_steps == 50


def test_default_preset_centres_pixels_and_holds_noise_and_old_configs_do_not():
    assert make_preset("default").center_pixels and make_preset("default").noise_hold == 8
    assert make_preset("default").ppo.ent_coef == 0.01
    assert not make_preset("rnd-atari").center_pixels  # published presets keep x / 255
    assert make_preset("rnd-atari").noise_hold == make_preset("icm-vizdoom").noise_hold == 1
    saved = make_preset("default").to_dict()
    del saved["center_pixels"], saved["noise_hold"]  # a run folder written before the fields existed
    old = TrainConfig.from_dict(saved)
    assert not old.center_pixels and old.noise_hold == 1


def test_icm_on_the_default_preset_gets_its_larger_entropy_bonus_and_set_still_wins():
    from wanderlust.cli import build_parser, config_from_args

    assert make_preset("default", "icm").ppo.ent_coef == 0.03
    assert make_preset("default", "icm").novelty_name == "icm"
    assert make_preset("default", "pixel").ppo.ent_coef == 0.03
    assert make_preset("default", "rnd").ppo.ent_coef == 0.03
    assert make_preset("default", "episodic").ppo.ent_coef == make_preset("default").ppo.ent_coef == 0.01
    assert make_preset("rnd-atari", "rnd").ppo.ent_coef == make_preset("rnd-atari").ppo.ent_coef == 0.001  # published
    assert make_preset("icm-vizdoom", "icm").ppo.ent_coef == make_preset("icm-vizdoom").ppo.ent_coef  # published
    parse = build_parser().parse_args
    assert config_from_args(parse(["train", "--novelty", "icm"])).ppo.ent_coef == 0.03
    assert config_from_args(parse(["train", "--novelty", "icm", "--set", "ppo.ent_coef=0.02"])).ppo.ent_coef == 0.02
    with pytest.raises(ValueError, match="unknown novelty 'icn'"):
        config_from_args(parse(["train", "--novelty", "icn"]))


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("total_steps", "-5", "total_steps must be a positive integer"),
        ("env.vector_mode", "threads", "vector_mode must be 'sync' or 'async'"),
        ("encoder", "resnet", "unknown encoder 'resnet'"),
        ("env.frame_size", "4", "frame_size must be between 8 and 1024"),
        ("ppo.num_minibatches", "7", "must be divisible by num_minibatches"),
        ("image_every", "-1", "image_every must be an integer >= 0"),
    ],
)
def test_bad_config_values_are_refused(key, value, message):
    config = make_preset("default")
    set_by_path(config, key, value)
    with pytest.raises(ValueError, match=message):
        config.validate()


def test_from_dict_names_unknown_keys():
    data = TrainConfig().to_dict()
    data["ppo"]["lerning_rate"] = 1.0
    with pytest.raises(ValueError, match="config.ppo.lerning_rate"):
        TrainConfig.from_dict(data)


def test_unknown_env_ids_get_close_matches():
    with pytest.raises(UnknownEnvError, match="did you mean 'wanderlust/MazeDiscrete-v0'"):
        ensure_registered("wanderlust/MazeDiscrete-v1")
    with pytest.raises(UnknownEnvError, match="wanderlust envs"):
        ensure_registered("zzzz-nothing-like-it")


def test_maze_observations_are_channels_first_stacks_with_the_newest_frame_last():
    config = EnvConfig(maze_size=5, maze_obs_size=32, frame_stack=3)
    env = make_env(config)
    obs0, _ = env.reset(seed=1)
    assert obs0.shape == (9, 32, 32) and obs0.dtype == np.uint8
    turn = np.array([1.0, 0.0, 0.0, 0.0], np.float32)
    obs1, *_ = env.step(turn)
    obs2, *_ = env.step(turn)
    assert np.array_equal(obs0[0:3], obs0[6:9])  # padded with the reset frame
    assert not np.array_equal(obs1[6:9], obs0[6:9])  # turning changes the view
    assert np.array_equal(obs2[3:6], obs1[6:9])  # frames shift towards the front
    spec = obs_spec(env.observation_space, config)
    assert spec.channels_per_frame == 3 and spec.shape == (9, 32, 32)
    env.close()


def test_grayscale_and_resize_use_gymnasium_wrappers():
    config = EnvConfig(maze_size=5, maze_obs_size=32, frame_stack=2, grayscale=True, frame_size=24)
    env = make_env(config)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (2, 24, 24)
    assert obs_spec(env.observation_space, config).channels_per_frame == 1
    env.close()


def test_vector_env_uses_same_step_autoreset_with_final_observations():
    config = EnvConfig(env_id=COUNT_ENV_ID, num_envs=2, frame_stack=1)
    envs = make_vector_env(config)
    obs, _ = envs.reset(seed=0)
    for _ in range(3):
        obs, reward, terminated, truncated, infos = envs.step(np.zeros(2, dtype=np.int64))
    assert terminated.all()
    assert obs.shape == (2, 1, 16, 16)
    assert (obs[:, 0, 0, 0] == 10).all()  # already the next episode's first frame
    assert all(final[0, 0, 0] == 3 for final in infos["final_obs"])
    assert (infos["final_info"]["episode"]["r"] == 2.0).all()  # 0.5 + 0.5 + 1.0
    envs.close()


def test_maze_fixed_start_starts_every_episode_in_the_top_left_cell():
    env = make_env(EnvConfig(maze_size=5, maze_obs_size=32, maze_fixed_start=True))
    assert [tuple(env.reset(seed=seed)[1]["cell"]) for seed in (1, 2, 3)] == [(0, 0)] * 3
    env.close()
    env = make_env(EnvConfig(maze_size=5, maze_obs_size=32))
    assert len({tuple(env.reset(seed=seed)[1]["cell"]) for seed in range(6)}) > 1
    env.close()


def test_maze_layout_seed_keeps_one_maze_for_every_episode():
    def layouts(config: EnvConfig) -> list[np.ndarray]:
        env = make_env(config)
        walls = []
        for seed in (1, 2):
            env.reset(seed=seed)
            walls.append(np.concatenate([env.unwrapped.layout.open_east.ravel(), env.unwrapped.layout.open_south.ravel()]))
        env.close()
        return walls

    fixed = layouts(EnvConfig(maze_size=5, maze_obs_size=32, maze_layout_seed=7))
    assert np.array_equal(fixed[0], fixed[1])
    assert np.array_equal(layouts(EnvConfig(maze_size=5, maze_obs_size=32, maze_layout_seed=7))[0], fixed[0])
    fresh = layouts(EnvConfig(maze_size=5, maze_obs_size=32))
    assert not np.array_equal(fresh[0], fresh[1])  # the default: a new maze every episode
