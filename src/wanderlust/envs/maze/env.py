"""``MazeEnv``: a first-person raycast maze driven by the two sticks of a gamepad.

Registered as ``wanderlust/Maze-v0`` (continuous sticks) and ``wanderlust/MazeDiscrete-v0``.

Example:
    >>> import gymnasium as gym, wanderlust
    >>> env = gym.make("wanderlust/Maze-v0", size=5)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, info["cells_visited"]
    ((64, 64, 3), np.int64(1))
    >>> obs, reward, terminated, truncated, info = env.step([0.0, 0.0, 0.0, 1.0])  # walk forward
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np

from wanderlust.envs.maze import physics
from wanderlust.envs.maze.layout import (
    Cell,
    MazeLayout,
    check_size,
    farthest_cell,
    generate_layout,
    region_map,
)
from wanderlust.envs.maze.mapview import draw_map
from wanderlust.envs.maze.raycast import (
    Camera,
    build_palette,
    cast_rays,
    draw_pillar,
    ray_directions,
    shade_walls,
)

DISCRETE_ACTIONS: tuple[str, ...] = (
    "noop",
    "forward",
    "back",
    "turn_left",
    "turn_right",
    "strafe_left",
    "strafe_right",
)
"""Meaning of each action of the discrete variant, in index order."""

DISCRETE_TO_STICKS = np.array(
    [
        [0.0, 0.0, 0.0, 0.0],  # noop
        [0.0, 0.0, 0.0, 1.0],  # forward
        [0.0, 0.0, 0.0, -1.0],  # back
        [-1.0, 0.0, 0.0, 0.0],  # turn left
        [1.0, 0.0, 0.0, 0.0],  # turn right
        [0.0, 0.0, -1.0, 0.0],  # strafe left
        [0.0, 0.0, 1.0, 0.0],  # strafe right
    ],
    dtype=np.float32,
)
"""``[7, 4]``: the stick values each discrete action stands for."""

MIN_OBS, MAX_OBS = 16, 512
GOAL_REACH = 0.4
"""The goal counts as reached when the agent's centre is this close to the pillar's centre."""
TRAIL_LENGTH = 4096
"""Positions kept for the trajectory drawn by ``render()``."""
REGIONS_PER_SIDE = 3
"""The maze is split into up to 3 x 3 colour regions."""


def _check_obs_size(obs_size: int | tuple[int, int]) -> tuple[int, int]:
    """``(H, W)`` from an int or pair, or ValueError if a side is outside [16, 512]."""
    sides = (obs_size, obs_size) if isinstance(obs_size, (int, np.integer)) else tuple(obs_size)
    if len(sides) != 2 or not all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in sides
    ):
        raise ValueError(f"obs_size must be an int or an (H, W) pair of ints, got {obs_size!r}")
    if not all(MIN_OBS <= s <= MAX_OBS for s in sides):
        raise ValueError(f"obs_size sides must be in [{MIN_OBS}, {MAX_OBS}] pixels, got {obs_size!r}")
    return int(sides[0]), int(sides[1])


def _check_start_cell(start_cell: Any, size: int) -> Cell:
    """``(row, col)`` as ints, or ValueError unless it is a pair of ints inside a ``size x size`` maze."""
    try:
        row, col = start_cell
    except (TypeError, ValueError):
        raise ValueError(f"start_cell must be a (row, col) pair, got {start_cell!r}") from None
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (row, col)) or not (
        0 <= row < size and 0 <= col < size
    ):
        raise ValueError(f"start_cell must be two ints in [0, {size}), got {start_cell!r}")
    return int(row), int(col)


class MazeEnv(gym.Env):
    """First-person maze: a perfect maze of ``size x size`` cells seen through a raycast camera.

    Observation: ``Box(0, 255, (H, W, 3), uint8)``, the view from the agent's eye: textured
    walls whose hue and pattern depend on the maze region, a darker shade on walls along
    horizontal grid lines, floor and ceiling shaded by distance, and (``goal=True``) a red
    pillar.

    Actions (``discrete=False``): ``Box(-1, 1, (4,), float32)``, the seed's gamepad
    ``[camera x, camera y, walk x, walk y]``: camera x turns right (+) / left (-) up to
    ``physics.TURN_SPEED`` rad/step (10 steps per 90 degrees); camera y raises (+) / lowers
    (-) the gaze (pitch rate, clamped to +-``physics.MAX_PITCH``; it shifts the horizon);
    walk x strafes right (+) / left (-); walk y walks forward (+) / back (-) at up to
    ``physics.MOVE_SPEED`` cells/step (5 steps per cell; the walk stick's length is capped
    at 1). Values outside [-1, 1] are clipped; NaN/inf or a shape other than ``(4,)``
    raise ValueError. ``discrete=True``: ``Discrete(7)``, see ``DISCRETE_ACTIONS``.

    Reward is 0 (pure exploration) unless ``goal=True``: then reaching the pillar in the cell
    farthest (by maze path) from the start gives +1 and ends the episode (terminated).
    Episodes are truncated after ``max_steps`` steps.

    ``info`` (reset and step): ``cell`` int64 ``[2]`` (row, col); ``cells_visited`` int64;
    ``coverage`` float64 = cells_visited / size**2; ``pose`` float32 ``[4]`` =
    (x, y, heading, pitch), x/y in cells, heading/pitch in radians, heading 0 = +x.

    Layout: a new maze from the env's ``np_random`` on every reset, unless
    ``fixed_layout=True`` (the maze from ``layout_seed``, or from the first reset, is kept).
    The agent starts at a random cell centre (or at ``start_cell``) with a random heading and
    level gaze.

    Args:
        discrete: use the 7-action discrete variant.
        size: cells per side, in [2, 64].
        obs_size: observation side in pixels, or an (H, W) pair; each in [16, 512].
        max_steps: steps per episode before truncation (>= 1).
        goal: place a goal pillar far from the start (+1 and terminate on reaching it).
        fixed_layout: keep one maze for all episodes.
        layout_seed: seed of the fixed maze (only with fixed_layout; None: first reset's).
        start_cell: (row, col) where every episode starts; None: a random cell each episode.
        render_mode: None or "rgb_array" (``render()`` returns a top-down map).
        fov: horizontal field of view in degrees, in [30, 120].
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 15}

    def __init__(
        self,
        discrete: bool = False,
        size: int = 9,
        obs_size: int | tuple[int, int] = 64,
        max_steps: int = 1000,
        goal: bool = False,
        fixed_layout: bool = False,
        layout_seed: int | None = None,
        start_cell: tuple[int, int] | None = None,
        render_mode: str | None = None,
        fov: float = 66.0,
    ) -> None:
        self.size = check_size(size)
        height, width = _check_obs_size(obs_size)
        if int(max_steps) < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        if not 30.0 <= float(fov) <= 120.0:
            raise ValueError(f"fov must be in [30, 120] degrees, got {fov}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if layout_seed is not None and not fixed_layout:
            raise ValueError("layout_seed only applies with fixed_layout=True; set both")
        self.start_cell = None if start_cell is None else _check_start_cell(start_cell, self.size)
        self.discrete = bool(discrete)
        self.max_steps = int(max_steps)
        self.goal = bool(goal)
        self.fixed_layout = bool(fixed_layout)
        self.render_mode = render_mode
        self.camera = Camera(height, width, math.radians(float(fov)), physics.MAX_PITCH)
        self.observation_space = gym.spaces.Box(0, 255, (height, width, 3), dtype=np.uint8)
        if self.discrete:
            self.action_space = gym.spaces.Discrete(len(DISCRETE_ACTIONS))
        else:
            self.action_space = gym.spaces.Box(-1.0, 1.0, (4,), dtype=np.float32)
        regions = region_map(self.size, REGIONS_PER_SIDE)
        self.cell_region = regions
        self._region_flat = regions.reshape(-1)
        self._palette = build_palette(self.camera, int(regions.max()) + 1)
        self._layout: MazeLayout | None = None
        if layout_seed is not None:
            self._layout = generate_layout(self.size, np.random.default_rng(layout_seed))
        self._x = self._y = self._heading = self._pitch = 0.0
        self._goal_cell: Cell | None = None
        self._visited = np.zeros((self.size, self.size), dtype=bool)
        self._n_visited = 0
        self._steps = 0
        self._trail: deque[tuple[float, float]] = deque(maxlen=TRAIL_LENGTH)

    # ---- state exposed to the oracle and to tests -------------------------------------
    @property
    def layout(self) -> MazeLayout:
        """The current maze (available after the first reset)."""
        if self._layout is None:
            raise RuntimeError("the maze is drawn on reset(); call env.reset() first")
        return self._layout

    @property
    def pose(self) -> np.ndarray:
        """float64 ``[4]``: (x, y, heading, pitch) of the agent."""
        return np.array([self._x, self._y, self._heading, self._pitch])

    @property
    def cell(self) -> Cell:
        """(row, col) of the cell holding the agent's centre."""
        return int(self._y), int(self._x)

    @property
    def goal_cell(self) -> Cell | None:
        """(row, col) of the goal pillar, or None without a goal."""
        return self._goal_cell

    @property
    def visited(self) -> np.ndarray:
        """``[S, S]`` bool copy: cells entered this episode."""
        return self._visited.copy()

    def set_pose(self, x: float, y: float, heading: float, pitch: float = 0.0) -> None:
        """Teleport the agent (tests, demos). Raises ValueError if it would overlap a wall.

        The new cell counts as visited; the step counter is unchanged.
        """
        layout = self.layout
        if physics.square_hits_wall(
            x, y, physics.AGENT_RADIUS, layout.vertical_walls, layout.horizontal_walls
        ):
            raise ValueError(f"pose ({x}, {y}) overlaps a wall; pick a point near a cell centre")
        self._x, self._y = float(x), float(y)
        self._heading = physics.wrap_angle(float(heading))
        self._pitch = min(physics.MAX_PITCH, max(-physics.MAX_PITCH, float(pitch)))
        self._visit()

    def discrete_to_sticks(self, action: Any) -> np.ndarray:
        """float32 ``[4]`` stick values for a discrete action index (ValueError if invalid)."""
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action.item()
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise ValueError(
                f"discrete action must be an int in [0, {len(DISCRETE_ACTIONS)}), got {action!r}"
            )
        if not 0 <= int(action) < len(DISCRETE_ACTIONS):
            raise ValueError(
                f"discrete action must be in [0, {len(DISCRETE_ACTIONS)}) "
                f"({', '.join(DISCRETE_ACTIONS)}), got {action}"
            )
        return DISCRETE_TO_STICKS[int(action)]

    # ---- Gymnasium API ------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode: draw the maze (unless fixed), the start pose and the goal."""
        super().reset(seed=seed)
        rng = self.np_random
        if self._layout is None or not self.fixed_layout:
            self._layout = generate_layout(self.size, rng)
        start = (int(rng.integers(self.size)), int(rng.integers(self.size)))  # drawn either way: same heading stream
        if self.start_cell is not None:
            start = self.start_cell
        self._goal_cell = farthest_cell(self._layout, start) if self.goal else None
        self._x, self._y = start[1] + 0.5, start[0] + 0.5
        self._heading = physics.wrap_angle(float(rng.uniform(-math.pi, math.pi)))
        self._pitch = 0.0
        self._steps = 0
        self._visited[:] = False
        self._n_visited = 0
        self._trail.clear()
        self._visit()
        return self._observe(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Apply one action (see the class docstring) and return the new view."""
        sticks = self.discrete_to_sticks(action) if self.discrete else self._check_sticks(action)
        layout = self.layout
        self._heading, self._pitch, dx, dy = physics.kinematics(
            self._heading, self._pitch, sticks
        )
        self._x, self._y = physics.move_with_collisions(
            self._x, self._y, dx, dy, layout.vertical_walls, layout.horizontal_walls
        )
        self._steps += 1
        self._visit()
        reward, terminated = 0.0, False
        if self._goal_cell is not None:
            gx, gy = self._goal_cell[1] + 0.5, self._goal_cell[0] + 0.5
            if math.hypot(self._x - gx, self._y - gy) < GOAL_REACH:
                reward, terminated = 1.0, True
        truncated = not terminated and self._steps >= self.max_steps
        return self._observe(), reward, terminated, truncated, self._info()

    def render(self) -> np.ndarray | None:
        """Top-down map ``[M, M, 3]`` uint8 for ``render_mode="rgb_array"``; None otherwise."""
        if self.render_mode != "rgb_array":
            return None
        goal = None
        if self._goal_cell is not None:
            goal = (self._goal_cell[1] + 0.5, self._goal_cell[0] + 0.5)
        trail = np.array(self._trail, dtype=np.float64).reshape(-1, 2)
        return draw_map(
            self.layout,
            self.cell_region,
            self._visited,
            trail,
            (self._x, self._y, self._heading),
            goal,
        )

    # ---- internals ----------------------------------------------------------------------
    @staticmethod
    def _check_sticks(action: Any) -> np.ndarray:
        """float32 ``[4]`` clipped to [-1, 1]; ValueError on a bad shape or NaN/inf."""
        sticks = np.asarray(action, dtype=np.float64)
        if sticks.shape != (4,):
            raise ValueError(
                f"action must have shape (4,) = [camera x, camera y, walk x, walk y], "
                f"got shape {sticks.shape}"
            )
        if not np.isfinite(sticks).all():
            raise ValueError(f"action contains NaN/inf: {sticks.tolist()}")
        return np.clip(sticks, -1.0, 1.0).astype(np.float32)

    def _visit(self) -> None:
        """Mark the agent's cell visited and extend the trail."""
        row, col = self.cell
        if not self._visited[row, col]:
            self._visited[row, col] = True
            self._n_visited += 1
        self._trail.append((self._x, self._y))

    def _observe(self) -> np.ndarray:
        """The first-person frame ``[H, W, 3]`` uint8 (a new array every call)."""
        camera = self.camera
        ray_x, ray_y = ray_directions(camera, self._heading)
        hits = cast_rays(self.layout.cell_walls, self._x, self._y, ray_x, ray_y)
        shift = camera.horizon_shift(self._pitch)
        frame = shade_walls(camera, hits, self._region_flat, self._palette, shift)
        if self._goal_cell is not None:
            target = (self._goal_cell[1] + 0.5, self._goal_cell[0] + 0.5)
            eye = (self._x, self._y, self._heading)
            draw_pillar(frame, camera, hits.distance, eye, target, shift)
        return frame

    def _info(self) -> dict[str, Any]:
        """Ground truth for logging and tests; numpy values only (vector envs stack them)."""
        return {
            "cell": np.array(self.cell, dtype=np.int64),
            "cells_visited": np.int64(self._n_visited),
            "coverage": np.float64(self._n_visited / (self.size * self.size)),
            "pose": np.array([self._x, self._y, self._heading, self._pitch], dtype=np.float32),
        }
