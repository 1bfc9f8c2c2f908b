"""Top-down map of the maze (``render_mode="rgb_array"``), drawn with numpy only."""

from __future__ import annotations

import math

import numpy as np

from wanderlust.envs.maze.layout import MazeLayout
from wanderlust.envs.maze.textures import GOAL_RGB, region_colors

UNSEEN_RGB = (200, 200, 200)
"""Cells the agent has not entered this episode."""
WALL_RGB = (30, 30, 36)
"""Wall lines."""
TRAIL_RGB = (40, 90, 220)
"""Trajectory dots."""
AGENT_RGB = (250, 200, 0)
"""Agent disc and heading line."""


def map_cell_pixels(size: int) -> int:
    """Pixels per cell side: about 288 px for the whole map, between 6 and 32 per cell."""
    return max(6, min(32, 288 // size))


def draw_map(
    layout: MazeLayout,
    cell_region: np.ndarray,
    visited: np.ndarray,
    trail: np.ndarray,
    pose: tuple[float, float, float],
    goal: tuple[float, float] | None,
) -> np.ndarray:
    """``[S * p + 1, S * p + 1, 3]`` uint8 map with ``p = map_cell_pixels(S)`` pixels per cell.

    Args:
        layout: the maze.
        cell_region: ``[S, S]`` region id per cell; visited cells take a pale region tint.
        visited: ``[S, S]`` bool, cells entered this episode.
        trail: ``[T, 2]`` past (x, y) positions, drawn as dots.
        pose: agent ``(x, y, heading)``, drawn as a disc with a heading line.
        goal: goal (x, y) or None.
    """
    size = layout.size
    p = map_cell_pixels(size)
    n = size * p + 1
    tints = 0.45 * region_colors(int(cell_region.max()) + 1) * 255 + 0.55 * 255
    cell_rgb = np.where(visited[..., None], tints[cell_region], np.array(UNSEEN_RGB))
    image = np.zeros((n, n, 3), dtype=np.uint8)
    image[: n - 1, : n - 1] = np.repeat(np.repeat(cell_rgb, p, axis=0), p, axis=1).astype(np.uint8)
    image[n - 1, :] = WALL_RGB
    image[:, n - 1] = WALL_RGB
    for i in range(size + 1):  # vertical wall lines x = i
        rows = np.repeat(layout.vertical_walls[:, i], p)
        image[: n - 1, min(i * p, n - 1)][rows] = WALL_RGB
    for j in range(size + 1):  # horizontal wall lines y = j
        cols = np.repeat(layout.horizontal_walls[j, :], p)
        image[min(j * p, n - 1), : n - 1][cols] = WALL_RGB
    if len(trail):
        pix = np.clip((np.asarray(trail) * p).astype(np.int64), 0, n - 1)
        image[pix[:, 1], pix[:, 0]] = TRAIL_RGB
    if goal is not None:
        _disc(image, goal[0] * p, goal[1] * p, max(2.0, 0.25 * p), GOAL_RGB)
    x, y, heading = pose
    _disc(image, x * p, y * p, max(1.5, 0.2 * p), AGENT_RGB)
    tip = np.linspace(0.0, 0.45 * p, max(2, p))
    hx = np.clip((x * p + tip * math.cos(heading)).astype(np.int64), 0, n - 1)
    hy = np.clip((y * p + tip * math.sin(heading)).astype(np.int64), 0, n - 1)
    image[hy, hx] = AGENT_RGB
    return image


def _disc(image: np.ndarray, cx: float, cy: float, radius: float, rgb: tuple[int, int, int]) -> None:
    """Fill a disc of ``radius`` pixels centred at pixel coordinates ``(cx, cy)``, in place."""
    n_rows, n_cols = image.shape[:2]
    r0, r1 = max(0, int(cy - radius)), min(n_rows, int(cy + radius) + 2)
    c0, c1 = max(0, int(cx - radius)), min(n_cols, int(cx + radius) + 2)
    rows = np.arange(r0, r1)[:, None] + 0.5
    cols = np.arange(c0, c1)[None, :] + 0.5
    inside = (rows - cy) ** 2 + (cols - cx) ** 2 <= radius**2
    image[r0:r1, c0:c1][inside] = rgb
