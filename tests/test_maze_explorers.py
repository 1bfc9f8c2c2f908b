"""Oracle, random and reference explorers of the maze, and run_explorer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wanderlust.envs.maze import physics
from wanderlust.envs.maze.env import DISCRETE_ACTIONS, MazeEnv
from wanderlust.envs.maze.explorers import (
    HOLD_STEPS,
    CorridorExplorer,
    OracleExplorer,
    RandomExplorer,
    make_explorer,
    run_explorer,
    steer_discrete,
    steer_sticks,
)


def test_steer_sticks_by_hand():
    # Target one cell straight ahead: no turn, full forward.
    assert steer_sticks(0.5, 0.5, 0.0, 1.5, 0.5, math.pi / 3) == pytest.approx([0, 0, 0, 1])
    # Target 0.1 ahead: half a step, so the agent stops on it.
    assert steer_sticks(0.5, 0.5, 0.0, 0.6, 0.5, math.pi / 3) == pytest.approx([0, 0, 0, 0.5])
    # Target behind: full turn, no walking yet.
    assert steer_sticks(0.5, 0.5, 0.0, -0.5, 0.5, math.pi / 3)[2:] == pytest.approx([0, 0])
    # Target to the right (+y), a small error: turn right, walk at it in the new frame.
    error = 0.05
    sticks = steer_sticks(0.0, 0.0, -error, 1.0, 0.0, math.pi / 3)
    assert sticks[0] == pytest.approx(error / physics.TURN_SPEED)
    assert sticks[2:] == pytest.approx([0, 1], abs=1e-6)
    # A quarter turn away: turn left at full rate; still outside a 60-degree cone after it.
    sticks = steer_sticks(0.0, 0.0, 0.0, 0.0, -1.0, math.pi / 3)
    assert sticks[0] == pytest.approx(-1.0) and not sticks[2:].any()


def test_steer_discrete_by_hand():
    forward = DISCRETE_ACTIONS.index("forward")
    assert steer_discrete(0.5, 0.5, 0.0, 1.5, 0.5) == forward
    assert steer_discrete(0.5, 0.5, 0.0, 0.5, 1.5) == DISCRETE_ACTIONS.index("turn_right")
    assert steer_discrete(0.5, 0.5, 0.0, 0.5, -0.5) == DISCRETE_ACTIONS.index("turn_left")
    # Within half a turn step of the bearing: walk.
    assert steer_discrete(0.0, 0.0, 0.9 * physics.TURN_SPEED / 2, 1.0, 0.0) == forward


@pytest.mark.parametrize("discrete", [False, True])
def test_oracle_covers_a_5x5_maze_and_beats_random(discrete):
    kwargs = {"size": 5, "discrete": discrete}
    for seed in (0, 1):
        oracle = run_explorer("oracle", 600, seed, kwargs)
        random = run_explorer("random", 600, seed, kwargs)
        assert oracle["coverage"] >= 0.9
        assert oracle["coverage"] > random["coverage"]


def test_oracle_on_default_maze_reaches_full_coverage_in_2000_steps():
    result = run_explorer("oracle", 2000, 0)
    assert result["coverage"] == 1.0 and result["cells_visited"] == 81


def test_oracle_walks_through_passages_and_keeps_going_after_the_tour():
    env = MazeEnv(size=4, max_steps=2000)
    env.reset(seed=3)
    oracle = OracleExplorer()
    oracle.reset(env)
    previous = env.cell
    for _ in range(400):
        env.step(oracle.act(env))
        if env.cell != previous:
            assert env.layout.has_passage(previous, env.cell)
            previous = env.cell
    assert oracle.finished and env.visited.all()
    assert not np.any(oracle.act(env))  # no-op once done


def test_oracle_reaches_the_goal():
    env = MazeEnv(size=6, goal=True, max_steps=3000)
    env.reset(seed=0)
    oracle = OracleExplorer()
    oracle.reset(env)
    total, terminated, steps = 0.0, False, 0
    while not terminated and steps < 3000:
        _, reward, terminated, _, _ = env.step(oracle.act(env))
        total += reward
        steps += 1
    assert terminated and total == 1.0
    assert env.cell == env.goal_cell


def test_random_explorer_is_seeded_and_in_range():
    env = MazeEnv(size=5)
    env.reset(seed=0)
    a, b, c = RandomExplorer(1), RandomExplorer(1), RandomExplorer(2)
    for explorer in (a, b, c):
        explorer.reset(env)
    actions_a = np.array([a.act(env) for _ in range(200)])
    actions_b = np.array([b.act(env) for _ in range(200)])
    actions_c = np.array([c.act(env) for _ in range(200)])
    assert actions_a.dtype == np.float32 and actions_a.shape == (200, 4)
    assert np.array_equal(actions_a, actions_b) and not np.array_equal(actions_a, actions_c)
    assert actions_a.min() >= -1 and actions_a.max() <= 1 and actions_a.min() < -0.9
    discrete = MazeEnv(size=5, discrete=True)
    explorer = RandomExplorer(0)
    explorer.reset(discrete)
    picks = {explorer.act(discrete) for _ in range(300)}
    assert picks == set(range(7))


def test_held_random_holds_each_uniform_action_for_its_steps():
    env = MazeEnv(size=5)
    env.reset(seed=0)
    held, plain = RandomExplorer(4, hold=3), RandomExplorer(4)
    held.reset(env)
    plain.reset(env)
    actions = np.array([held.act(env) for _ in range(12)])
    draws = np.array([plain.act(env) for _ in range(4)])  # the same generator, one draw per hold
    assert np.array_equal(actions, np.repeat(draws, 3, axis=0))
    assert np.array_equal(draws, np.random.default_rng(4).uniform(-1, 1, (4, 4)).astype(np.float32))
    held.reset(env)  # a new episode draws a new action at once
    assert not np.array_equal(held.act(env), actions[-1])
    assert make_explorer("held-random", seed=0).hold == HOLD_STEPS == 4
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="hold must be a positive integer"):
            RandomExplorer(0, hold=bad)


@pytest.mark.parametrize("discrete", [False, True])
def test_corridor_walks_passages_and_turns_back_only_at_dead_ends(discrete):
    env = MazeEnv(size=7, discrete=discrete, max_steps=1500)
    env.reset(seed=5)
    explorer = CorridorExplorer(seed=2)
    explorer.reset(env)
    path = [env.cell]
    for _ in range(1500):
        env.step(explorer.act(env))
        if env.cell != path[-1]:
            path.append(env.cell)
    assert len(path) > 30
    layout = env.layout
    for a, b in zip(path, path[1:]):
        assert layout.has_passage(a, b)  # moves only through open walls, one cell at a time
    turned_back = [b for a, b, c in zip(path, path[1:], path[2:]) if a == c]
    assert turned_back and all(len(layout.neighbors(b)) == 1 for b in turned_back)


def test_reference_explorers_sit_between_random_and_the_oracle():
    def coverage(name):
        return np.mean([run_explorer(name, 1000, seed=100 + i)["coverage"] for i in range(3)])

    random, held, corridor, oracle = (coverage(n) for n in ("random", "held-random", "corridor", "oracle"))
    assert random < held < corridor < oracle
    assert held > 1.4 * random and corridor > 4 * random


def test_run_explorer_result():
    result = run_explorer("random", 50, 3, {"size": 5})
    assert result["steps"] == 50 and len(result["coverage_curve"]) == 50
    assert result["coverage"] == result["coverage_curve"][-1]
    assert result["coverage"] == pytest.approx(result["cells_visited"] / 25)
    assert np.all(np.diff(result["coverage_curve"]) >= 0)
    assert result == run_explorer("random", 50, 3, {"size": 5})


def test_run_explorer_bad_input():
    with pytest.raises(ValueError, match="unknown explorer"):
        make_explorer("greedy")
    with pytest.raises(ValueError, match="max_steps"):
        run_explorer("oracle", 100, 0, {"max_steps": 10})
    with pytest.raises(ValueError, match="steps"):
        run_explorer("oracle", 0, 0)
