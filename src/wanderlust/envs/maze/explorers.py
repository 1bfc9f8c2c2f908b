"""Reference explorers for the maze: an oracle (the coverage ceiling) and a random baseline.

Both drive the env through its normal action space, so their coverage is directly
comparable with a learned agent's. The oracle cheats by reading the maze graph and the
agent's pose from ``env.unwrapped``; it performs a depth-first walk that enters every cell.

Example:
    >>> from wanderlust.envs.maze.explorers import run_explorer
    >>> result = run_explorer("oracle", steps=600, seed=0, env_kwargs={"size": 5})
    >>> result["coverage"]
    1.0
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from wanderlust.envs.maze import physics
from wanderlust.envs.maze.env import DISCRETE_ACTIONS, MazeEnv
from wanderlust.envs.maze.layout import Cell, dfs_tour

EXPLORER_NAMES: tuple[str, ...] = ("oracle", "random")
"""Names accepted by ``make_explorer`` and ``run_explorer``."""

_FORWARD = DISCRETE_ACTIONS.index("forward")
_TURN_LEFT = DISCRETE_ACTIONS.index("turn_left")
_TURN_RIGHT = DISCRETE_ACTIONS.index("turn_right")
_NOOP = DISCRETE_ACTIONS.index("noop")


class Explorer(Protocol):
    """Something that picks maze actions. Call ``reset`` after every ``env.reset``."""

    def reset(self, env: gym.Env) -> None:
        """Prepare for the episode that ``env`` has just started."""

    def act(self, env: gym.Env) -> Any:
        """The next action for ``env``: float32 ``[4]`` sticks, or an int (discrete)."""


def _maze(env: gym.Env) -> MazeEnv:
    """The MazeEnv under any wrappers, or ValueError."""
    maze = env.unwrapped
    if not isinstance(maze, MazeEnv):
        raise ValueError(f"the oracle needs a wanderlust MazeEnv, got {type(maze).__name__}")
    return maze


def steer_sticks(
    x: float, y: float, heading: float, target_x: float, target_y: float, walk_cone: float
) -> np.ndarray:
    """float32 ``[4]`` sticks that turn toward ``target`` and walk straight at it.

    Camera x turns by the heading error (clipped to one step's worth of turning). The walk
    stick points at the target in the frame of the heading *after* this turn (that is how
    ``physics.kinematics`` applies it), with length ``min(1, distance / MOVE_SPEED)`` so the
    agent stops on the target; it stays at zero while the target is more than ``walk_cone``
    radians off the new heading (turn first, then walk).
    """
    dx, dy = target_x - x, target_y - y
    distance = math.hypot(dx, dy)
    if distance < 1e-9:
        return np.zeros(4, dtype=np.float32)
    bearing = math.atan2(dy, dx)
    turn = max(-1.0, min(1.0, physics.wrap_angle(bearing - heading) / physics.TURN_SPEED))
    relative = physics.wrap_angle(bearing - (heading + turn * physics.TURN_SPEED))
    sticks = np.array([turn, 0.0, 0.0, 0.0], dtype=np.float32)
    if abs(relative) <= walk_cone:
        length = min(1.0, distance / physics.MOVE_SPEED)
        sticks[2] = length * math.sin(relative)  # strafe right is +
        sticks[3] = length * math.cos(relative)  # forward is +
    return sticks


def steer_discrete(x: float, y: float, heading: float, target_x: float, target_y: float) -> int:
    """Discrete action index: turn until the heading error is within half a turn step, then walk."""
    bearing = math.atan2(target_y - y, target_x - x)
    error = physics.wrap_angle(bearing - heading)
    if abs(error) > 0.5 * physics.TURN_SPEED + 1e-9:
        return _TURN_RIGHT if error > 0 else _TURN_LEFT
    return _FORWARD


class OracleExplorer:
    """Depth-first walk of the maze graph, cell centre to cell centre, via the action space.

    Args:
        walk_cone: radians; the continuous oracle walks only while the next centre is within
            this angle of its heading, otherwise it turns in place first.
    """

    def __init__(self, walk_cone: float = math.pi / 3) -> None:
        self.walk_cone = walk_cone
        self._tour: list[Cell] = []
        self._next = 0

    def reset(self, env: gym.Env) -> None:
        """Plan the depth-first tour from the agent's current cell."""
        maze = _maze(env)
        self._tour = dfs_tour(maze.layout, maze.cell)
        self._next = 1

    @property
    def finished(self) -> bool:
        """Whether every cell of the tour has been reached."""
        return self._next >= len(self._tour)

    def act(self, env: gym.Env) -> np.ndarray | int:
        """Steer toward the next cell centre of the tour (no-op once the tour is done)."""
        maze = _maze(env)
        x, y, heading, _ = maze.pose
        # Close enough that the next step would land on (or just past) the centre.
        reach = 0.6 * physics.MOVE_SPEED if maze.discrete else 1e-3
        while not self.finished:
            row, col = self._tour[self._next]
            if math.hypot(col + 0.5 - x, row + 0.5 - y) > reach:
                break
            self._next += 1
        if self.finished:
            return _NOOP if maze.discrete else np.zeros(4, dtype=np.float32)
        row, col = self._tour[self._next]
        if maze.discrete:
            return steer_discrete(x, y, heading, col + 0.5, row + 0.5)
        return steer_sticks(x, y, heading, col + 0.5, row + 0.5, self.walk_cone)


class RandomExplorer:
    """Uniformly random actions from the env's action space, from its own seeded generator."""

    def __init__(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)
        self._space: gym.Space | None = None

    def reset(self, env: gym.Env) -> None:
        """Remember the action space (the generator keeps running across episodes)."""
        self._space = env.action_space

    def act(self, env: gym.Env) -> np.ndarray | int:
        """A uniform sample: float sticks in [low, high] or an int in [start, start + n)."""
        space = self._space if self._space is not None else env.action_space
        if isinstance(space, gym.spaces.Discrete):
            return int(space.start + self._rng.integers(space.n))
        if isinstance(space, gym.spaces.Box):
            return self._rng.uniform(space.low, space.high).astype(space.dtype)
        raise ValueError(f"RandomExplorer supports Box and Discrete spaces, got {space}")


def make_explorer(name: str, seed: int | None = None) -> Explorer:
    """An explorer by name (one of EXPLORER_NAMES); ``seed`` feeds the random one."""
    if name == "oracle":
        return OracleExplorer()
    if name == "random":
        return RandomExplorer(seed)
    raise ValueError(f"unknown explorer {name!r}; choose one of {', '.join(EXPLORER_NAMES)}")


def run_explorer(
    explorer_name: str, steps: int, seed: int, env_kwargs: dict | None = None
) -> dict[str, Any]:
    """Run one episode of ``steps`` steps of a named explorer in a fresh MazeEnv.

    ``env_kwargs`` go to ``MazeEnv``; ``max_steps`` defaults to ``steps`` (a smaller value is
    an error, since the episode must last ``steps`` steps). The episode ends early only if a
    goal is reached (``goal=True``).

    Returns:
        ``{"explorer", "seed", "steps"`` (steps taken), ``"coverage"``, ``"cells_visited"``,
        ``"terminated"``, ``"coverage_curve"`` (list of coverage after each step, length
        ``steps`` taken)``}``.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    kwargs = dict(env_kwargs or {})
    if kwargs.setdefault("max_steps", steps) < steps:
        raise ValueError(
            f"env_kwargs max_steps={kwargs['max_steps']} < steps={steps}; "
            "the run is one episode, so raise max_steps or drop it"
        )
    explorer = make_explorer(explorer_name, seed)
    env = MazeEnv(**kwargs)
    _, info = env.reset(seed=seed)
    explorer.reset(env)
    curve: list[float] = []
    terminated = False
    for _ in range(steps):
        _, _, terminated, truncated, info = env.step(explorer.act(env))
        curve.append(float(info["coverage"]))
        if terminated or truncated:
            break
    env.close()
    return {
        "explorer": explorer_name,
        "seed": seed,
        "steps": len(curve),
        "coverage": float(info["coverage"]),
        "cells_visited": int(info["cells_visited"]),
        "terminated": bool(terminated),
        "coverage_curve": curve,
    }
