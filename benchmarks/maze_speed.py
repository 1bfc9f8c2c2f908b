"""Raw speed of the built-in maze next to ALE Breakout, and the explorers' coverage.

Usage::

    python benchmarks/maze_speed.py          # about a minute
    python benchmarks/maze_speed.py --quick  # about 20 s

Prints two tables:

1. env steps per second with uniformly random actions (no learning, no torch): the maze at
   64x64 and 84x84 in this process, 8 maze envs in Gymnasium's SyncVectorEnv and
   AsyncVectorEnv at 64x64 (counted as 8 env steps per vector step), and
   ``ALE/Breakout-v5`` (frameskip=4) measured in the same run; the last column is the ratio
   to Breakout.
2. coverage of the default 9x9 maze after 1,000 and 10,000 steps of one episode for the
   random baseline and the oracle (depth-first walk), mean over a few seeds.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

from wanderlust.envs.maze.env import MazeEnv  # noqa: E402
from wanderlust.envs.maze.explorers import run_explorer  # noqa: E402

VECTOR_ENVS = 8


def steps_per_second(step: Callable[[int], int], seconds: float) -> float:
    """Call ``step(i)`` (which returns the env steps it made) for ``seconds``; env steps / s."""
    for i in range(20):  # warm-up
        step(i)
    done, calls, start = 0, 0, time.perf_counter()
    while True:
        done += step(calls)
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def single_env_speed(env: gym.Env, seconds: float) -> float:
    """Steps/s of one env under random actions, resetting when an episode ends."""
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(4096)]
    env.reset(seed=0)

    def step(i: int) -> int:
        _, _, terminated, truncated, _ = env.step(actions[i % len(actions)])
        if terminated or truncated:
            env.reset()
        return 1

    try:
        return steps_per_second(step, seconds)
    finally:
        env.close()


def vector_speed(vector_cls: type, obs_size: int, seconds: float) -> float:
    """Env steps/s of VECTOR_ENVS mazes in a Gymnasium vector env (autoreset on)."""
    envs = vector_cls([lambda: MazeEnv(obs_size=obs_size) for _ in range(VECTOR_ENVS)])
    envs.action_space.seed(0)
    actions = [envs.action_space.sample() for _ in range(512)]
    envs.reset(seed=0)

    def step(i: int) -> int:
        envs.step(actions[i % len(actions)])
        return VECTOR_ENVS

    try:
        return steps_per_second(step, seconds)
    finally:
        envs.close()


def breakout_speed(seconds: float) -> float | None:
    """Steps/s of ALE/Breakout-v5 (frameskip=4), or None if ale-py is missing."""
    try:
        import ale_py
    except ImportError:
        return None
    gym.register_envs(ale_py)
    return single_env_speed(gym.make("ALE/Breakout-v5", frameskip=4), seconds)


def coverage_table(seeds: int, short: int, long: int) -> dict[str, tuple[float, float]]:
    """Mean coverage after ``short`` and ``long`` steps of one episode, per explorer."""
    table = {}
    for name in ("random", "oracle"):
        at_short, at_long = [], []
        for seed in range(seeds):
            curve = run_explorer(name, long, seed)["coverage_curve"]
            at_short.append(curve[short - 1])
            at_long.append(curve[-1])
        table[name] = (float(np.mean(at_short)), float(np.mean(at_long)))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter timings, fewer seeds")
    args = parser.parse_args()
    seconds = 1.5 if args.quick else 5.0
    seeds = 2 if args.quick else 5
    started = time.perf_counter()

    ale = breakout_speed(seconds)
    rows = [
        ("maze 64x64, 1 env", single_env_speed(MazeEnv(obs_size=64), seconds)),
        ("maze 84x84, 1 env", single_env_speed(MazeEnv(obs_size=84), seconds)),
        (
            f"maze 64x64, SyncVectorEnv x{VECTOR_ENVS}",
            vector_speed(gym.vector.SyncVectorEnv, 64, seconds),
        ),
        (
            f"maze 64x64, AsyncVectorEnv x{VECTOR_ENVS}",
            vector_speed(gym.vector.AsyncVectorEnv, 64, seconds),
        ),
        ("ALE/Breakout-v5 frameskip=4, 1 env", ale),
    ]
    print("Env steps per second (random actions; vector rows count 8 env steps per call)")
    print(f"{'setting':<38}{'steps/s':>10}{'maze/ALE':>10}")
    for name, speed in rows:
        shown = f"{speed:10.0f}" if speed is not None else f"{'n/a':>10}"
        ratio = f"{speed / ale:9.2f}x" if speed is not None and ale else f"{'n/a':>10}"
        print(f"{name:<38}{shown}{ratio}")

    short, long = 1_000, 10_000
    table = coverage_table(seeds, short, long)
    print()
    print(f"Coverage of the 9x9 maze, one episode, mean over {seeds} seeds")
    print(f"{'explorer':<10}{'@1,000 steps':>14}{'@10,000 steps':>15}")
    for name, (at_short, at_long) in table.items():
        print(f"{name:<10}{at_short:>14.1%}{at_long:>15.1%}")
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
