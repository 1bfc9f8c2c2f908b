"""Agent kinematics and wall collisions for the maze (pure functions, scalar math).

The agent is a disc of radius ``AGENT_RADIUS``. Collisions are tested with its bounding
square (half-side = radius), which is conservative: if the square touches no wall, neither
does the disc. Walls are the thin segments of :class:`~wanderlust.envs.maze.layout.MazeLayout`.
Movement is resolved one axis at a time (x, then y), so the agent slides along walls.
"""

from __future__ import annotations

import math

import numpy as np

MOVE_SPEED = 0.2
"""World units (cells) per step at full stick: 5 steps to cross a cell."""
TURN_SPEED = math.pi / 20
"""Radians per step at full camera-x: 10 steps to turn 90 degrees."""
PITCH_SPEED = 0.08
"""Radians per step of pitch change at full camera-y."""
MAX_PITCH = 0.5
"""Pitch is clamped to ``[-MAX_PITCH, MAX_PITCH]`` radians (about +-29 degrees)."""
AGENT_RADIUS = 0.15
"""Collision radius of the agent, in cells."""
CLEARANCE = 1e-6
"""Gap kept between the agent's square and a wall after a blocked move."""


def wrap_angle(angle: float) -> float:
    """Map an angle in radians to ``[-pi, pi)``."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def kinematics(
    heading: float, pitch: float, action: np.ndarray
) -> tuple[float, float, float, float]:
    """Apply one gamepad action ``[4]`` = (camera x, camera y, walk x, walk y), each in [-1, 1].

    Returns ``(new_heading, new_pitch, dx, dy)``: camera x turns right (+) / left (-) by up to
    TURN_SPEED, camera y pitches up (+) / down (-) by up to PITCH_SPEED (clamped to
    MAX_PITCH), and the walk stick (strafe right +, forward +) is applied in the frame of the
    *new* heading; its length is capped at 1 so diagonals are not faster.
    """
    new_heading = wrap_angle(heading + float(action[0]) * TURN_SPEED)
    new_pitch = min(MAX_PITCH, max(-MAX_PITCH, pitch + float(action[1]) * PITCH_SPEED))
    strafe, forward = float(action[2]), float(action[3])
    norm = math.hypot(strafe, forward)
    if norm > 1.0:
        strafe, forward = strafe / norm, forward / norm
    cos_h, sin_h = math.cos(new_heading), math.sin(new_heading)
    # forward = (cos h, sin h); right = (-sin h, cos h) (y grows downwards on the map).
    dx = MOVE_SPEED * (forward * cos_h - strafe * sin_h)
    dy = MOVE_SPEED * (forward * sin_h + strafe * cos_h)
    return new_heading, new_pitch, dx, dy


def square_hits_wall(
    x: float, y: float, half: float, vertical_walls: np.ndarray, horizontal_walls: np.ndarray
) -> bool:
    """Whether the square centred at ``(x, y)`` with half-side ``half`` touches any wall segment.

    ``vertical_walls`` is ``[S, S + 1]``, ``horizontal_walls`` ``[S + 1, S]`` (see layout.py).
    Touching counts as hitting. Positions outside the world always hit (the border is walled).
    """
    size = vertical_walls.shape[0]
    x0, x1, y0, y1 = x - half, x + half, y - half, y + half
    if x0 <= 0.0 or y0 <= 0.0 or x1 >= size or y1 >= size:
        return True
    rows = range(math.floor(y0), min(math.floor(y1), size - 1) + 1)
    cols = range(math.floor(x0), min(math.floor(x1), size - 1) + 1)
    for i in range(math.ceil(x0), math.floor(x1) + 1):
        for r in rows:
            if vertical_walls[r, i]:
                return True
    for j in range(math.ceil(y0), math.floor(y1) + 1):
        for c in cols:
            if horizontal_walls[j, c]:
                return True
    return False


def _slide_axis(coord: float, delta: float, half: float) -> float:
    """Largest move along one axis that stops ``CLEARANCE`` short of the next grid line.

    When a move of ``delta`` (|delta| < 1 - 2 * half) is blocked, the obstacle always lies on
    the first integer grid line beyond the square's leading edge (a wall on that line or the
    end of a perpendicular wall starting there), so stopping just before it is exact.
    """
    if delta > 0:
        line = math.floor(coord + half) + 1
        return max(coord, line - half - CLEARANCE)
    line = math.ceil(coord - half) - 1
    return min(coord, line + half + CLEARANCE)


def move_with_collisions(
    x: float,
    y: float,
    dx: float,
    dy: float,
    vertical_walls: np.ndarray,
    horizontal_walls: np.ndarray,
    radius: float = AGENT_RADIUS,
) -> tuple[float, float]:
    """Move ``(x, y)`` by ``(dx, dy)``, x first then y, stopping at walls (sliding along them).

    Requires a collision-free start and ``|dx|, |dy| < 1 - 2 * radius`` (one grid line per
    axis at most); then the result is collision-free too.
    """
    if dx != 0.0:
        nx = x + dx
        if square_hits_wall(nx, y, radius, vertical_walls, horizontal_walls):
            nx = _slide_axis(x, dx, radius)
        x = nx
    if dy != 0.0:
        ny = y + dy
        if square_hits_wall(x, ny, radius, vertical_walls, horizontal_walls):
            ny = _slide_axis(y, dy, radius)
        y = ny
    return x, y
