"""Reference explorers for the maze: an oracle (the coverage ceiling), a random baseline and two
references in between.

All drive the env through its normal action space, so their coverage is directly comparable
with a learned agent's. The oracle cheats by reading the maze graph and the agent's pose from
``env.unwrapped``; it performs a depth-first walk that enters every cell. The references:

- ``held-random``: a uniform random action held for ``HOLD_STEPS`` steps (what persistence alone
  adds to the random baseline, as an action repeat of 4 would);
- ``corridor``: a memoryless walk of the maze graph that never turns back unless it must (a dead
  end), steering like the oracle: what a reactive corridor follower with no memory of the episode
  can cover. Like the oracle it reads the maze graph.

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

EXPLORER_NAMES: tuple[str, ...] = ("oracle", "random", "held-random", "corridor")
"""Names accepted by ``make_explorer`` and ``run_explorer``."""
HOLD_STEPS = 4
"""Steps the ``held-random`` explorer holds each random action."""

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


def _reach(maze: MazeEnv) -> float:
    """How close to a cell centre counts as there: the next step would land on (or just past) it."""
    return 0.6 * physics.MOVE_SPEED if maze.discrete else 1e-3


def _at_centre(maze: MazeEnv, cell: Cell) -> bool:
    x, y, _, _ = maze.pose
    return math.hypot(cell[1] + 0.5 - x, cell[0] + 0.5 - y) <= _reach(maze)


def _steer_to(maze: MazeEnv, cell: Cell, walk_cone: float) -> np.ndarray | int:
    """The action that turns toward ``cell``'s centre and walks to it."""
    x, y, heading, _ = maze.pose
    if maze.discrete:
        return steer_discrete(x, y, heading, cell[1] + 0.5, cell[0] + 0.5)
    return steer_sticks(x, y, heading, cell[1] + 0.5, cell[0] + 0.5, walk_cone)


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
        while not self.finished and _at_centre(maze, self._tour[self._next]):
            self._next += 1
        if self.finished:
            return _NOOP if maze.discrete else np.zeros(4, dtype=np.float32)
        return _steer_to(maze, self._tour[self._next], self.walk_cone)


class CorridorExplorer:
    """A memoryless walk of the maze graph: at each cell centre, a random open neighbour other than
    the cell it came from (back only at a dead end), steered to like the oracle's tour.

    Args:
        seed: seeds the choice at junctions.
        walk_cone: as for :class:`OracleExplorer`.
    """

    def __init__(self, seed: int | None = None, walk_cone: float = math.pi / 3) -> None:
        self._rng = np.random.default_rng(seed)
        self.walk_cone = walk_cone
        self._previous: Cell | None = None
        self._target: Cell | None = None

    def reset(self, env: gym.Env) -> None:
        """Start from the agent's cell, with no cell behind it."""
        maze = _maze(env)
        self._previous, self._target = None, maze.cell

    def act(self, env: gym.Env) -> np.ndarray | int:
        """Steer to the current target cell; on reaching its centre, pick the next one."""
        maze = _maze(env)
        if self._target is None:
            self.reset(env)
        if _at_centre(maze, self._target):
            here = self._target
            neighbours = maze.layout.neighbors(here)
            choices = [n for n in neighbours if n != self._previous] or neighbours
            self._previous, self._target = here, choices[int(self._rng.integers(len(choices)))]
        return _steer_to(maze, self._target, self.walk_cone)


class RandomExplorer:
    """Uniformly random actions from the env's action space, from its own seeded generator, each
    held for ``hold`` steps (1: a new action every step)."""

    def __init__(self, seed: int | None = None, hold: int = 1) -> None:
        if isinstance(hold, bool) or not isinstance(hold, int) or hold < 1:
            raise ValueError(f"hold must be a positive integer, got {hold!r}")
        self._rng = np.random.default_rng(seed)
        self.hold = hold
        self._space: gym.Space | None = None
        self._action: np.ndarray | int | None = None
        self._held = 0

    def reset(self, env: gym.Env) -> None:
        """Remember the action space and drop the held action (the generator keeps running)."""
        self._space = env.action_space
        self._action, self._held = None, 0

    def act(self, env: gym.Env) -> np.ndarray | int:
        """A uniform sample (float sticks in [low, high] or an int in [start, start + n)), drawn
        anew every ``hold`` steps."""
        if self._action is not None and self._held < self.hold:
            self._held += 1
            return self._action
        space = self._space if self._space is not None else env.action_space
        if isinstance(space, gym.spaces.Discrete):
            self._action = int(space.start + self._rng.integers(space.n))
        elif isinstance(space, gym.spaces.Box):
            self._action = self._rng.uniform(space.low, space.high).astype(space.dtype)
        else:
            raise ValueError(f"RandomExplorer supports Box and Discrete spaces, got {space}")
        self._held = 1
        return self._action


def make_explorer(name: str, seed: int | None = None) -> Explorer:
    """An explorer by name (one of EXPLORER_NAMES); ``seed`` feeds the random choices."""
    if name == "oracle":
        return OracleExplorer()
    if name == "random":
        return RandomExplorer(seed)
    if name == "held-random":
        return RandomExplorer(seed, hold=HOLD_STEPS)
    if name == "corridor":
        return CorridorExplorer(seed)
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
