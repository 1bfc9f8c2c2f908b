"""MazeEnv: the Gymnasium contract, actions, collisions, goal, info and rendering."""

from __future__ import annotations

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import wanderlust  # noqa: F401  (registers the env ids)
from wanderlust.envs import MAZE_DISCRETE_ID, MAZE_ID
from wanderlust.envs.maze import physics
from wanderlust.envs.maze.env import DISCRETE_ACTIONS, MazeEnv
from wanderlust.envs.maze.layout import path_distances


def open_direction(env: MazeEnv) -> tuple[tuple[int, int], float]:
    """A neighbour of the agent's cell reachable through a passage, and the heading to it."""
    row, col = env.cell
    other = env.layout.neighbors((row, col))[0]
    return other, math.atan2(other[0] - row, other[1] - col)


# ---- Gymnasium contract ------------------------------------------------------------------
@pytest.mark.parametrize("discrete", [False, True])
def test_check_env_unwrapped(discrete):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no spec: cannot test other render modes"
        check_env(MazeEnv(discrete=discrete, size=5))
        check_env(MazeEnv(discrete=discrete, size=5, goal=True, render_mode="rgb_array"))


@pytest.mark.parametrize("env_id", [MAZE_ID, MAZE_DISCRETE_ID])
def test_check_env_through_gym_make(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # check_env warns that gym.make wraps the env
        env = gym.make(env_id, size=5)
        check_env(env)
        check_env(env.unwrapped)


def test_spaces():
    env = MazeEnv(obs_size=(48, 80))
    assert env.observation_space == gym.spaces.Box(0, 255, (48, 80, 3), np.uint8)
    assert env.action_space == gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    assert MazeEnv(discrete=True).action_space == gym.spaces.Discrete(7)
    assert DISCRETE_ACTIONS == (
        "noop", "forward", "back", "turn_left", "turn_right", "strafe_left", "strafe_right"
    )
    assert "rgb_array" in MazeEnv.metadata["render_modes"] and MazeEnv.metadata["render_fps"] > 0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"size": 1}, r"\[2, 64\]"),
        ({"size": 65}, r"\[2, 64\]"),
        ({"obs_size": 15}, r"\[16, 512\]"),
        ({"obs_size": 513}, r"\[16, 512\]"),
        ({"obs_size": (64, 8)}, r"\[16, 512\]"),
        ({"obs_size": (64, 64, 3)}, "pair"),
        ({"max_steps": 0}, "max_steps"),
        ({"render_mode": "human"}, "render_mode"),
        ({"layout_seed": 3}, "fixed_layout"),
        ({"start_cell": (0, 9)}, r"start_cell must be two ints in \[0, 9\)"),
        ({"start_cell": (-1, 0)}, "start_cell"),
        ({"start_cell": (0.5, 1)}, "start_cell"),
        ({"start_cell": 3}, r"\(row, col\) pair"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MazeEnv(**kwargs)


# ---- determinism and layouts ------------------------------------------------------------
def rollout(env: MazeEnv, seed: int, steps: int) -> tuple[list[np.ndarray], list[dict]]:
    rng = np.random.default_rng(123)
    obs, info = env.reset(seed=seed)
    frames, infos = [obs], [info]
    for _ in range(steps):
        action = rng.uniform(-1, 1, 4).astype(np.float32)
        obs, _, _, _, info = env.step(action)
        frames.append(obs)
        infos.append(info)
    return frames, infos


def test_deterministic_given_seed_and_actions():
    frames_a, infos_a = rollout(MazeEnv(size=7, goal=True), 5, 40)
    frames_b, infos_b = rollout(MazeEnv(size=7, goal=True), 5, 40)
    assert all(np.array_equal(a, b) for a, b in zip(frames_a, frames_b))
    for a, b in zip(infos_a, infos_b):
        assert a.keys() == b.keys()
        assert all(np.array_equal(a[key], b[key]) for key in a)
    frames_c, _ = rollout(MazeEnv(size=7, goal=True), 6, 40)
    assert not all(np.array_equal(a, c) for a, c in zip(frames_a, frames_c))


def same_maze(a, b) -> bool:
    return np.array_equal(a.open_east, b.open_east) and np.array_equal(a.open_south, b.open_south)


def test_new_seed_new_maze_same_seed_same_maze():
    env = MazeEnv(size=9)
    env.reset(seed=0)
    first = env.layout
    env.reset(seed=1)
    assert not same_maze(first, env.layout)
    env.reset(seed=0)
    assert same_maze(first, env.layout)
    env.reset()  # unseeded resets continue the generator: a fresh maze
    assert not same_maze(first, env.layout)


def test_start_cell_fixes_the_start_but_not_the_heading():
    env = MazeEnv(size=9, start_cell=(2, 7))
    headings = set()
    for seed in range(4):
        _, info = env.reset(seed=seed)
        assert tuple(info["cell"]) == (2, 7) and info["cells_visited"] == 1
        assert env.pose[0] == 7.5 and env.pose[1] == 2.5
        headings.add(round(float(env.pose[2]), 6))
    assert len(headings) == 4  # the heading is still drawn per episode
    free = MazeEnv(size=9)
    starts = {tuple(free.reset(seed=seed)[1]["cell"]) for seed in range(8)}
    assert len(starts) > 1  # without start_cell the start moves


def test_fixed_layout():
    env = MazeEnv(size=9, fixed_layout=True, layout_seed=42)
    env.reset(seed=0)
    first = env.layout
    env.reset(seed=1)
    assert same_maze(first, env.layout)
    other = MazeEnv(size=9, fixed_layout=True, layout_seed=43)
    other.reset(seed=0)
    assert not same_maze(first, other.layout)
    env = MazeEnv(size=9, fixed_layout=True)  # the first reset's maze is kept
    env.reset(seed=3)
    first = env.layout
    env.reset(seed=4)
    env.reset()
    assert same_maze(first, env.layout)


def test_layout_before_reset_is_an_error():
    with pytest.raises(RuntimeError, match="reset"):
        MazeEnv().layout


# ---- actions ----------------------------------------------------------------------------
def test_collisions_never_cross_walls():
    env = MazeEnv(size=6, max_steps=10_000)
    rng = np.random.default_rng(0)
    for seed in range(2):
        _, info = env.reset(seed=seed)
        layout = env.layout
        previous = tuple(info["cell"])
        for _ in range(600):
            turn = rng.uniform(-1, 1) if rng.random() < 0.3 else 0.0
            action = np.array([turn, 0.0, rng.uniform(-0.3, 0.3), 1.0], dtype=np.float32)
            _, _, _, _, info = env.step(action)
            x, y = info["pose"][:2]
            assert not physics.square_hits_wall(
                float(x), float(y), physics.AGENT_RADIUS, layout.vertical_walls,
                layout.horizontal_walls,
            )
            cell = tuple(info["cell"])
            assert layout.in_bounds(cell)
            if cell != previous:
                (r0, c0), (r1, c1) = previous, cell
                if abs(r0 - r1) + abs(c0 - c1) == 1:
                    assert layout.has_passage(previous, cell)
                else:  # a corner cut: must be possible through one of the two side cells
                    assert abs(r0 - r1) == 1 and abs(c0 - c1) == 1
                    assert any(
                        layout.has_passage(previous, mid) and layout.has_passage(mid, cell)
                        for mid in ((r0, c1), (r1, c0))
                    )
            previous = cell


def test_out_of_range_actions_are_clipped():
    a, b = MazeEnv(size=5), MazeEnv(size=5)
    a.reset(seed=1)
    b.reset(seed=1)
    for _ in range(5):
        obs_a, _, _, _, info_a = a.step(np.array([5.0, -7.0, 3.0, 5.0]))
        obs_b, _, _, _, info_b = b.step(np.array([1.0, -1.0, 1.0, 1.0]))
        assert np.array_equal(obs_a, obs_b)
        assert np.array_equal(info_a["pose"], info_b["pose"])


@pytest.mark.parametrize("bad", [[np.nan, 0, 0, 0], [0, 0, np.inf, 0], [0, 0, 0, -np.inf]])
def test_non_finite_action_raises(bad):
    env = MazeEnv(size=5)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action contains NaN/inf"):
        env.step(np.array(bad))


@pytest.mark.parametrize("bad", [[0.0, 0.0, 1.0], np.zeros((2, 4)), 1.0])
def test_wrong_action_shape_raises(bad):
    env = MazeEnv(size=5)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        env.step(bad)


@pytest.mark.parametrize("bad", [-1, 7, 1.5, np.float32(2.0), True])
def test_bad_discrete_action_raises(bad):
    env = MazeEnv(size=5, discrete=True)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="discrete action"):
        env.step(bad)


def test_discrete_actions_do_what_they_say():
    env = MazeEnv(size=5, discrete=True)
    obs, _ = env.reset(seed=2)
    row, col = env.cell
    _, heading = open_direction(env)
    env.set_pose(col + 0.5, row + 0.5, heading)
    start = env.pose
    forward = np.array([math.cos(heading), math.sin(heading)])
    right = np.array([-math.sin(heading), math.cos(heading)])
    expectations = {
        0: (np.zeros(2), 0.0),
        1: (0.2 * forward, 0.0),
        2: (-0.2 * forward, 0.0),
        3: (np.zeros(2), -math.pi / 20),
        4: (np.zeros(2), math.pi / 20),
        5: (-0.2 * right, 0.0),
        6: (0.2 * right, 0.0),
    }
    for action, (move, turn) in expectations.items():
        env.set_pose(*start)
        before = env._observe()
        obs, _, _, _, info = env.step(np.int64(action))
        assert info["pose"][:2] == pytest.approx(start[:2] + move, abs=1e-5), DISCRETE_ACTIONS[action]
        assert physics.wrap_angle(info["pose"][2] - start[2]) == pytest.approx(turn, abs=1e-5)
        assert np.array_equal(obs, before) == (action == 0)


def test_speeds_cell_in_five_steps_quarter_turn_in_ten():
    env = MazeEnv(size=5)
    env.reset(seed=2)
    row, col = env.cell
    other, heading = open_direction(env)
    env.set_pose(col + 0.5, row + 0.5, heading)
    for _ in range(5):
        _, _, _, _, info = env.step([0.0, 0.0, 0.0, 1.0])
    assert tuple(info["cell"]) == other
    assert info["pose"][:2] == pytest.approx([other[1] + 0.5, other[0] + 0.5], abs=1e-5)
    for _ in range(10):
        _, _, _, _, info = env.step([-1.0, 0.0, 0.0, 0.0])
    assert physics.wrap_angle(info["pose"][2] - heading) == pytest.approx(-math.pi / 2, abs=1e-5)


def test_pitch_is_a_clamped_rate_that_moves_the_view():
    env = MazeEnv(size=5)
    obs, _ = env.reset(seed=0)
    obs_up, _, _, _, info = env.step([0.0, 1.0, 0.0, 0.0])
    assert info["pose"][3] == pytest.approx(physics.PITCH_SPEED)
    assert not np.array_equal(obs, obs_up)
    for _ in range(20):
        _, _, _, _, info = env.step([0.0, 1.0, 0.0, 0.0])
    assert info["pose"][3] == pytest.approx(physics.MAX_PITCH)
    assert info["pose"][:3] == pytest.approx(env.pose[:3])


# ---- reward, goal, truncation -------------------------------------------------------------
def test_reward_is_zero_without_goal():
    env = MazeEnv(size=5)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    rewards = [env.step(rng.uniform(-1, 1, 4))[1] for _ in range(50)]
    assert rewards == [0.0] * 50


def test_goal_is_far_visible_and_rewarding():
    env = MazeEnv(size=7, goal=True, max_steps=100)
    _, info = env.reset(seed=4)
    start = tuple(info["cell"])
    goal = env.goal_cell
    distances = path_distances(env.layout, start)
    assert distances[goal] == distances.max() > 0
    # Stand in a neighbouring cell looking at the goal: the pillar shows as bright red.
    nxt = env.layout.neighbors(goal)[0]
    heading = math.atan2(goal[0] - nxt[0], goal[1] - nxt[1])
    env.set_pose(nxt[1] + 0.5, nxt[0] + 0.5, heading)
    frame = env._observe()
    red = (frame[..., 0] > 180) & (frame[..., 1] < 60) & (frame[..., 2] < 60)
    assert red[:, 28:36].sum() > 20
    env.set_pose(nxt[1] + 0.5, nxt[0] + 0.5, heading + math.pi)  # looking away
    frame = env._observe()
    assert not ((frame[..., 0] > 180) & (frame[..., 1] < 60)).any()
    env.set_pose(nxt[1] + 0.5, nxt[0] + 0.5, heading)
    rewards, terminated = [], False
    while not terminated and len(rewards) < 10:
        _, reward, terminated, truncated, _ = env.step([0.0, 0.0, 0.0, 1.0])
        rewards.append(reward)
    assert terminated and not truncated
    assert rewards[-1] == 1.0 and sum(rewards) == 1.0


def test_truncation_at_max_steps():
    env = MazeEnv(size=5, max_steps=5)
    env.reset(seed=0)
    flags = [env.step([0.0, 0.0, 0.0, 0.0])[3] for _ in range(5)]
    assert flags == [False, False, False, False, True]
    env.reset(seed=0)
    assert env.step([0.0, 0.0, 0.0, 0.0])[3] is False


# ---- info, views, rendering ------------------------------------------------------------
def test_info_fields_and_monotone_coverage():
    env = MazeEnv(size=5, max_steps=300)
    _, info = env.reset(seed=0)
    assert info["cell"].dtype == np.int64 and info["cell"].shape == (2,)
    assert info["pose"].dtype == np.float32 and info["pose"].shape == (4,)
    assert isinstance(info["cells_visited"], np.integer) and info["cells_visited"] == 1
    assert isinstance(info["coverage"], np.floating) and info["coverage"] == pytest.approx(1 / 25)
    rng = np.random.default_rng(1)
    coverage = [info["coverage"]]
    for _ in range(200):
        _, _, _, _, info = env.step(np.array([rng.uniform(-0.5, 0.5), 0, 0, 1.0]))
        coverage.append(info["coverage"])
        assert info["coverage"] == pytest.approx(info["cells_visited"] / 25)
        assert tuple(info["cell"]) == (int(info["pose"][1]), int(info["pose"][0]))
        assert info["cells_visited"] == env.visited.sum()
    assert np.all(np.diff(coverage) >= 0) and coverage[-1] > coverage[0]
    _, info = env.reset(seed=1)
    assert info["cells_visited"] == 1


def test_views_differ_between_distant_places():
    env = MazeEnv(size=9)
    env.reset(seed=0)
    env.set_pose(0.5, 0.5, 0.3)
    near = env._observe().astype(np.int64)
    env.set_pose(8.5, 8.5, 0.3)
    far = env._observe().astype(np.int64)
    assert np.abs(near - far).mean() > 10


def test_render_top_down_map():
    env = MazeEnv(size=6, goal=True, render_mode="rgb_array")
    env.reset(seed=0)
    for _ in range(10):
        env.step([0.2, 0.0, 0.0, 1.0])
    image = env.render()
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    assert image.shape[0] == image.shape[1] >= 6 * 6
    is_red = (image[..., 0] > 200) & (image[..., 1] < 60) & (image[..., 2] < 60)
    assert is_red.any()  # goal
    assert MazeEnv(size=6).render() is None


def test_sync_vector_env():
    envs = gym.vector.SyncVectorEnv([lambda: MazeEnv(size=5, max_steps=4) for _ in range(2)])
    obs, info = envs.reset(seed=[0, 1])
    assert obs.shape == (2, 64, 64, 3)
    assert info["cell"].shape == (2, 2) and info["coverage"].shape == (2,)
    for _ in range(5):
        obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
    assert obs.shape == (2, 64, 64, 3) and reward.shape == (2,)
    assert info["pose"].shape == (2, 4)
    envs.close()
