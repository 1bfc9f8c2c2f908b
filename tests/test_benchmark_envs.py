"""The benchmark env families (Atari, MiniGrid, VizDoom, vector envs), the presets, and one tiny
training update on each."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from wanderlust.agent.actor_critic import ActorCritic
from wanderlust.agent.encoders import MLPEncoder
from wanderlust.algo.storage import RolloutStorage
from wanderlust.algo.trainer import train
from wanderlust.envs.factory import UnknownEnvError, ensure_registered, make_env, obs_spec
from wanderlust.novelty import NoveltyConfig, make_novelty
from wanderlust.runtime.config import PRESETS, EnvConfig, make_preset, set_by_path

from wanderlust.envs.vizdoom_starts import START_SPOTS, player_position


HARD_ATARI = ("ALE/Venture-v5", "ALE/Gravitar-v5", "ALE/PrivateEye-v5", "ALE/Pitfall-v5", "ALE/Solaris-v5")
MINIGRID = ("MiniGrid-DoorKey-8x8-v0", "MiniGrid-MultiRoom-N6-v0", "MiniGrid-KeyCorridorS3R3-v0")


def _atari_config(env_id: str = "ALE/MontezumaRevenge-v5", **changes) -> EnvConfig:
    config = make_preset("rnd-atari").env
    config.env_id = env_id
    for key, value in changes.items():
        setattr(config, key, value)
    return config


# ---- Atari ----

def test_montezuma_gets_the_standard_preprocessing():
    env = make_env(_atari_config())
    obs, info = env.reset(seed=0)
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
    assert isinstance(env.action_space, gym.spaces.Discrete) and env.action_space.n == 18
    assert all(np.array_equal(obs[0], obs[i]) for i in range(1, 4))  # the stack is padded with the reset frame
    ale = env.unwrapped.ale
    assert ale.getFloat("repeat_action_probability") == pytest.approx(0.25)  # sticky actions (v5)
    frames = info["frame_number"]
    _, _, _, _, info = env.step(0)
    assert info["frame_number"] - frames == 4  # frameskip=1 inside, 4 frames per agent step in the wrapper
    env.close()


def test_atari_time_limit_counts_agent_steps():
    env = make_env(_atari_config(max_episode_steps=3))
    env.reset(seed=0)
    ends = [env.step(0)[3] for _ in range(3)]
    assert ends == [False, False, True]
    env.close()


def test_montezuma_reports_the_rooms_visited_from_ram():
    env = make_env(_atari_config())
    _, info = env.reset(seed=0)
    assert info["rooms_visited"] == 1 and info["coverage"] == pytest.approx(1 / 24)
    ale = env.unwrapped.ale
    start_room = int(ale.getRAM()[3])
    ale.setRAM(3, (start_room + 5) % 24)  # as if the player walked into another room
    _, _, _, _, info = env.step(0)
    assert info["rooms_visited"] == 2 and info["coverage"] == pytest.approx(2 / 24)
    _, info = env.reset(seed=1)
    assert info["rooms_visited"] == 1  # counted per episode
    env.close()


@pytest.mark.parametrize("env_id", HARD_ATARI)
def test_other_hard_exploration_games_build(env_id):
    env = make_env(_atari_config(env_id))
    obs, info = env.reset(seed=0)
    obs, *_ = env.step(env.action_space.sample())
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
    assert "coverage" not in info  # rooms are only read for Montezuma
    env.close()


def test_atari_without_the_preprocessing_keeps_full_frames():
    env = make_env(_atari_config(atari_preprocessing=False, frame_size=None, grayscale=False, frame_stack=1))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (3, 210, 160)
    env.close()


# ---- MiniGrid ----

@pytest.mark.parametrize("env_id", MINIGRID)
def test_minigrid_gives_rgb_egocentric_pixels(env_id):
    config = make_preset("minigrid").env
    config.env_id = env_id
    env = make_env(config)
    obs, _ = env.reset(seed=3)
    assert obs.shape == (3, 56, 56) and obs.dtype == np.uint8
    assert isinstance(env.action_space, gym.spaces.Discrete) and env.action_space.n == 7
    expected = env.unwrapped.get_frame(tile_size=8, agent_pov=True)  # [H, W, 3]
    assert np.array_equal(obs.transpose(1, 2, 0), expected)
    obs2, *_ = env.step(1)  # turn right: the view changes
    assert not np.array_equal(obs2, obs)
    env.close()


def test_minigrid_tile_size_and_resize():
    env = make_env(EnvConfig(env_id="MiniGrid-DoorKey-8x8-v0", frame_stack=2, minigrid_tile_size=4, frame_size=40))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (6, 40, 40)
    env.close()


# ---- VizDoom ----

def _doom_config(env_id: str, **changes) -> EnvConfig:
    config = make_preset("icm-vizdoom").env
    config.env_id = env_id
    for key, value in changes.items():
        setattr(config, key, value)
    return config


def test_my_way_home_screen_is_preprocessed_and_actions_repeat():
    env = make_env(_doom_config("VizdoomMyWayHome-v1"))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 42, 42) and obs.dtype == np.uint8
    assert isinstance(env.action_space, gym.spaces.Discrete) and env.action_space.n == 6
    game = env.unwrapped.game
    assert (game.get_screen_width(), game.get_screen_height()) == (160, 120)
    tic = game.get_episode_time()
    env.step(np.array(3))  # a 0-d array action, as the evaluation loop passes it
    assert game.get_episode_time() - tic == 4
    env.close()


def test_my_way_home_dense_start_is_random_and_sparse_starts_are_fixed():
    positions = {}
    for env_id in ("VizdoomMyWayHome-v1", "wanderlust/MyWayHomeSparse-v0", "wanderlust/MyWayHomeVerySparse-v0"):
        env = make_env(_doom_config(env_id, vizdoom_resolution="160x120"))
        seen = []
        for seed in range(4):
            env.reset(seed=seed)
            seen.append(player_position(env))
        env.close()
        positions[env_id] = np.array(seen)
    dense = positions["VizdoomMyWayHome-v1"]
    assert len({tuple(np.round(p)) for p in dense}) > 1  # different spawn spots
    for env_id, start in (("wanderlust/MyWayHomeSparse-v0", "sparse"),
                          ("wanderlust/MyWayHomeVerySparse-v0", "very_sparse")):
        _, x, y = START_SPOTS[start]
        assert np.allclose(positions[env_id], [x, y], atol=1.0), env_id
    assert not np.allclose(positions["wanderlust/MyWayHomeSparse-v0"][0], START_SPOTS["very_sparse"][1:], atol=50)


# ---- vector observations ----

def test_vector_observations_pass_through_as_float32():
    env = make_env(EnvConfig(env_id="CartPole-v1"))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4,) and obs.dtype == np.float32
    spec = obs_spec(env.observation_space, EnvConfig(env_id="CartPole-v1"))
    assert spec.shape == (4,)
    agent = ActorCritic(env.observation_space.shape, env.action_space, encoder="nature")
    assert isinstance(agent.encoder, MLPEncoder)
    step = agent.act(torch.from_numpy(obs).unsqueeze(0))
    assert step.env_action.shape == (1,)
    env.close()
    pendulum = make_env(EnvConfig(env_id="Pendulum-v1"))
    assert pendulum.observation_space.shape == (3,)
    assert np.all(pendulum.action_space.low == -1) and np.all(pendulum.action_space.high == 1)
    pendulum.close()


def test_rollout_storage_keeps_vectors_as_floats():
    storage = RolloutStorage(2, 1, (4,), gym.spaces.Discrete(2), torch.device("cpu"))
    storage.obs[0, 0] = torch.tensor([0.25, -1.5, 3.0, 0.0])
    assert storage.obs.dtype == torch.float32 and storage.obs[0, 0, 1].item() == -1.5


@pytest.mark.parametrize("name", ["pixel", "icm", "episodic"])
def test_image_only_novelty_refuses_vectors_in_one_line(name):
    with pytest.raises(ValueError, match=f"novelty '{name}' needs image observations"):
        make_novelty(name, NoveltyConfig(), obs_spec(gym.spaces.Box(-1, 1, (4,)), EnvConfig()),
                     gym.spaces.Discrete(2), 2, "cpu")


def test_rnd_on_vectors_learns_to_predict_what_it_saw():
    torch.manual_seed(0)
    module = make_novelty("rnd", NoveltyConfig(), obs_spec(gym.spaces.Box(-1, 1, (4,)), EnvConfig()),
                          gym.spaces.Discrete(2), 2, "cpu")
    seen = torch.randn(64, 4)
    unseen = torch.randn(64, 4) * 3 + 5
    ends = torch.zeros(64, dtype=torch.bool)
    before = module.reward(seen, seen, torch.zeros(64, dtype=torch.int64), ends).mean()
    from wanderlust.novelty.base import NoveltyBatch

    for _ in range(30):
        module.update(NoveltyBatch(obs=seen, next_obs=seen, actions=torch.zeros(64, dtype=torch.int64)))
    after = module.reward(seen, seen, torch.zeros(64, dtype=torch.int64), ends).mean()
    novel = module.reward(unseen, unseen, torch.zeros(64, dtype=torch.int64), ends).mean()
    assert after < 0.5 * before
    assert novel > after


# ---- config, presets, errors ----

def test_presets_carry_the_published_values():
    assert {"default", "quick", "rnd-atari", "icm-vizdoom", "minigrid"} <= set(PRESETS)
    rnd = make_preset("rnd-atari")
    assert (rnd.env.num_envs, rnd.ppo.num_steps, rnd.ppo.gamma, rnd.ppo.gamma_int) == (128, 128, 0.999, 0.99)
    assert (rnd.ppo.learning_rate, rnd.ppo.ent_coef, rnd.ppo.ext_coef, rnd.ppo.int_coef) == (1e-4, 0.001, 2.0, 1.0)
    assert rnd.novelty.rnd.update_proportion == 0.25 and rnd.env.max_episode_steps * 4 == 18_000
    assert rnd.total_steps * 4 == 30_000 * 128 * 128 * 4  # 1.97B frames
    icm = make_preset("icm-vizdoom")
    assert (icm.env.frame_size, icm.env.grayscale, icm.env.frame_stack, icm.env.action_repeat) == (42, True, 4, 4)
    assert (icm.novelty.icm.beta, icm.novelty.icm.learning_rate, icm.novelty_name) == (0.2, 1e-3, "icm")
    assert icm.ppo.learning_rate == pytest.approx(1e-4)  # lambda 0.1 x lr 1e-3
    for name in PRESETS:
        make_preset(name).validate()
    assert make_preset("quick").env.num_envs == 2 and make_preset("default").novelty_name == "episodic"


def test_env_settings_parse_and_validate():
    config = make_preset("default")
    set_by_path(config, "env.vizdoom_resolution", "160x120")
    set_by_path(config, "env.action_repeat", "4")
    assert config.env.vizdoom_resolution == "160x120" and config.env.action_repeat == 4
    config.validate()
    set_by_path(config, "novelty_name", "none")  # the baseline's name, not None
    set_by_path(config, "env.max_episode_steps", "none")  # an optional field: None
    assert config.novelty_name == "none" and config.env.max_episode_steps is None
    config.validate()
    set_by_path(config, "env.vizdoom_resolution", "big")
    with pytest.raises(ValueError, match="vizdoom_resolution must look like '160x120'"):
        config.validate()


def test_family_settings_on_the_wrong_env_are_refused():
    with pytest.raises(ValueError, match="action_repeat applies to ALE/ and VizDoom ids only"):
        make_env(EnvConfig(env_id="CartPole-v1", action_repeat=4))
    with pytest.raises(ValueError, match="action_repeat applies to ALE/ and VizDoom ids only"):
        make_env(EnvConfig(env_id="wanderlust/Maze-v0", action_repeat=2))
    with pytest.raises(ValueError, match="vizdoom_resolution applies to VizDoom ids only"):
        make_env(EnvConfig(env_id="MiniGrid-DoorKey-8x8-v0", vizdoom_resolution="160x120"))


@pytest.mark.parametrize("typed, suggestion", [
    pytest.param("VizdoomMyWayHome-v0", "VizdoomMyWayHome-v1"),
    pytest.param("ALE/MontezumaRevenge-v4", "ALE/MontezumaRevenge-v5"),
    pytest.param("MiniGrid-DoorKey-8x8-v1", "MiniGrid-DoorKey-8x8-v0"),
    pytest.param("wanderlust/MyWayHomeSparse-v1", "wanderlust/MyWayHomeSparse-v0"),
])
def test_unknown_ids_get_suggestions(typed, suggestion):
    with pytest.raises(UnknownEnvError, match=f"did you mean '{suggestion}'"):
        ensure_registered(typed)


# ---- one tiny training update per family ----

def _tiny(config, env_id: str, novelty: str):
    config.env.env_id = env_id
    config.env.num_envs = 2
    config.ppo.num_steps = 16
    config.ppo.num_minibatches = 2
    config.ppo.update_epochs = 1
    config.novelty_name = novelty
    config.total_steps = 32
    config.checkpoint_every = 32
    config.torch_threads = 1
    return config


@pytest.mark.parametrize("preset, env_id, novelty", [
    pytest.param("rnd-atari", "ALE/MontezumaRevenge-v5", "rnd"),
    pytest.param("minigrid", "MiniGrid-DoorKey-8x8-v0", "rnd"),
    pytest.param("icm-vizdoom", "wanderlust/MyWayHomeSparse-v0", "icm"),
    ("default", "CartPole-v1", "rnd"),
    ("default", "Pendulum-v1", "none"),
])
def test_one_training_update_end_to_end(tmp_path, preset, env_id, novelty):
    config = _tiny(make_preset(preset), env_id, novelty)
    result = train(config, tmp_path, show_progress=False)
    assert (result.global_step, result.updates, result.interrupted) == (32, 1, False)
    assert math.isfinite(result.last_metrics["losses/policy_loss"])
    assert any((tmp_path / "checkpoints").glob("ckpt-*"))


def test_cli_trains_montezuma_with_the_rnd_preset(tmp_path):
    from wanderlust.cli import main

    run_dir = tmp_path / "run"
    code = main(["train", "ALE/MontezumaRevenge-v5", "--preset", "rnd-atari", "--num-envs", "2", "--num-steps", "16",
                 "--total-steps", "32", "--run-dir", str(run_dir), "--no-progress", "--set", "torch_threads=1"])
    assert code == 0
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["ppo"]["gamma"] == 0.999 and saved["env"]["num_envs"] == 2 and saved["novelty_name"] == "rnd"
