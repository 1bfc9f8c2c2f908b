"""First-person view of the maze: vectorized DDA ray casting over all screen columns at once.

One ray per screen column (``W`` rays). Each ray walks from cell to cell across grid lines
(digital differential analysis) and stops at the first wall segment it crosses; the loop
runs over DDA iterations (at most ``2 * S + 2``), never over pixels. Distances are
perpendicular to the view direction (no fish-eye). Pitch is a vertical shear: the horizon
moves ``focal * tan(pitch)`` rows down when looking up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from wanderlust.envs.maze.textures import (
    FOG_LEVELS,
    GOAL_RGB,
    LEVELS_PER_UNIT,
    TEX,
    background,
    max_horizon_shift,
    wall_table,
)

GOAL_RADIUS = 0.2
"""Radius of the goal pillar, in cells."""
GOAL_HEIGHT = 0.8
"""Height of the goal pillar (walls are 1 high, the eye is at 0.5)."""


@dataclass(frozen=True)
class Camera:
    """Screen geometry: ``height x width`` pixels and a horizontal field of view."""

    height: int
    """Image rows, ``H``."""
    width: int
    """Image columns, ``W``."""
    fov: float
    """Horizontal field of view in radians."""
    max_pitch: float
    """Largest |pitch| in radians; sizes the pre-rendered floor/ceiling strip."""
    focal: float = field(init=False)
    """Focal length in pixels, ``(W / 2) / tan(fov / 2)``, used for both axes."""
    camera_x: np.ndarray = field(init=False, repr=False)
    """``[W]``: column centres mapped to [-1, 1] across the image plane."""
    row_centers: np.ndarray = field(init=False, repr=False)
    """``[H, 1]``: pixel row centres (y + 0.5)."""
    pixel_rows: np.ndarray = field(init=False, repr=False)
    """``[H, 1]`` int64: pixel row indices."""
    max_shift: int = field(init=False)
    """Largest horizon shift in rows."""
    backdrop: np.ndarray = field(init=False, repr=False)
    """``[H + 2 * max_shift, 3]`` uint8 floor/ceiling row colours (see textures.background)."""

    def __post_init__(self) -> None:
        focal = (self.width / 2.0) / math.tan(self.fov / 2.0)
        object.__setattr__(self, "focal", focal)
        object.__setattr__(
            self, "camera_x", 2.0 * (np.arange(self.width) + 0.5) / self.width - 1.0
        )
        object.__setattr__(self, "pixel_rows", np.arange(self.height)[:, None])
        object.__setattr__(self, "row_centers", self.pixel_rows + 0.5)
        shift = max_horizon_shift(focal, self.max_pitch)
        object.__setattr__(self, "max_shift", shift)
        object.__setattr__(self, "backdrop", background(self.height, focal, shift))

    def horizon_shift(self, pitch: float) -> int:
        """Rows the horizon moves down for ``pitch`` radians (looking up is positive)."""
        shift = int(round(self.focal * math.tan(pitch)))
        return max(-self.max_shift, min(self.max_shift, shift))


@dataclass(frozen=True)
class RayHits:
    """Where each column's ray meets a wall; all arrays are ``[W]``."""

    distance: np.ndarray
    """float64 perpendicular distance to the wall (the depth buffer)."""
    horizontal: np.ndarray
    """bool: True if the wall lies on a horizontal grid line (y = const)."""
    texture_u: np.ndarray
    """float64 in [0, 1): position of the hit along the wall segment."""
    cell: np.ndarray
    """int64 flat index ``row * S + col`` of the cell the ray was in when it hit."""


def ray_directions(camera: Camera, heading: float) -> tuple[np.ndarray, np.ndarray]:
    """``([W], [W])`` x and y components of each column's ray, ``dir + plane * camera_x``.

    ``dir`` is the unit heading vector; ``plane`` points right with length ``tan(fov / 2)``,
    so a hit at ray parameter ``t`` lies ``t`` units in front of the eye (perpendicular depth).
    """
    cos_h, sin_h = math.cos(heading), math.sin(heading)
    half = math.tan(camera.fov / 2.0)
    ray_x = cos_h - sin_h * half * camera.camera_x
    ray_y = sin_h + cos_h * half * camera.camera_x
    return ray_x, ray_y


def cast_rays(
    cell_walls: np.ndarray, x: float, y: float, ray_x: np.ndarray, ray_y: np.ndarray
) -> RayHits:
    """Walk every ray from ``(x, y)`` through the grid until it crosses a wall segment.

    ``cell_walls`` is ``MazeLayout.cell_walls`` (``[S, S, 4]`` bool, E/W/S/N); ``ray_x``,
    ``ray_y`` are ``[W]``. The point must lie strictly inside the maze.
    """
    size = cell_walls.shape[0]
    walls = cell_walls.reshape(-1)
    col, row = int(x), int(y)
    ray_x = np.where(ray_x == 0.0, 1e-30, ray_x)
    ray_y = np.where(ray_y == 0.0, 1e-30, ray_y)
    east, south = ray_x > 0, ray_y > 0
    step_x = np.abs(1.0 / ray_x)  # ray parameter between vertical grid lines
    step_y = np.abs(1.0 / ray_y)
    next_x = np.where(east, col + 1.0 - x, x - col) * step_x  # t at the next vertical line
    next_y = np.where(south, row + 1.0 - y, y - row) * step_y
    wall_x = np.where(east, 0, 1)  # which of the cell's walls an x-crossing tests
    wall_y = np.where(south, 2, 3)
    move_x = np.where(east, 4, -4)  # flat index change (4 walls per cell)
    move_y = np.where(south, 4 * size, -4 * size)
    index = np.full(ray_x.shape, (row * size + col) * 4, dtype=np.int64)
    for _ in range(2 * size + 2):
        crosses_x = next_x < next_y
        blocked = walls[index + np.where(crosses_x, wall_x, wall_y)]
        if blocked.all():
            break
        go_x = crosses_x & ~blocked
        go_y = ~(crosses_x | blocked)
        next_x = next_x + go_x * step_x
        next_y = next_y + go_y * step_y
        index += go_x * move_x + go_y * move_y
    distance = np.where(crosses_x, next_x, next_y)
    along = np.where(crosses_x, y + distance * ray_y, x + distance * ray_x)
    texture_u = along - np.floor(along)
    # Mirror so textures read left-to-right on every face.
    flip = np.where(crosses_x, ~east, south)
    texture_u = np.where(flip, 1.0 - texture_u, texture_u)
    return RayHits(distance, ~crosses_x, texture_u, index >> 2)


def build_palette(camera: Camera, n_regions: int) -> np.ndarray:
    """``[n_texels + len(camera.backdrop), 3]`` uint8: wall texels, then backdrop rows.

    One table for every colour a frame can hold, so a frame is a single ``np.take``.
    """
    return np.concatenate([wall_table(n_regions), camera.backdrop])


def shade_walls(
    camera: Camera, hits: RayHits, cell_region: np.ndarray, palette: np.ndarray, shift: int
) -> np.ndarray:
    """``[H, W, 3]`` uint8 frame: floor/ceiling backdrop with the textured walls drawn over it.

    ``cell_region`` is the flat ``[S * S]`` region id of each cell; ``palette`` comes from
    ``build_palette``; ``shift`` is the horizon shift in rows (``Camera.horizon_shift``).
    """
    height = camera.height
    n_texels = len(palette) - len(camera.backdrop)
    half = 0.5 * camera.focal / hits.distance  # [W] half wall height in pixels
    top = (height / 2.0 + shift) - half
    level = np.minimum((hits.distance * LEVELS_PER_UNIT).astype(np.int64), FOG_LEVELS - 1)
    texel_u = np.minimum((hits.texture_u * TEX).astype(np.int64), TEX - 1)
    region = cell_region[hits.cell]
    base = ((region * 2 + hits.horizontal) * FOG_LEVELS + level) * (TEX * TEX) + texel_u
    v = (camera.row_centers - top) * (TEX / (2.0 * half))  # [H, W] texel rows
    inside = (v >= 0.0) & (v < TEX)
    backdrop_rows = n_texels + camera.max_shift - shift + camera.pixel_rows  # [H, 1]
    index = np.where(inside, base + v.astype(np.int64) * TEX, backdrop_rows)  # [H, W]
    return np.take(palette, index, axis=0)


def draw_pillar(
    frame: np.ndarray,
    camera: Camera,
    depth_buffer: np.ndarray,
    eye: tuple[float, float, float],
    target: tuple[float, float],
    shift: int,
) -> None:
    """Draw the goal pillar at ``target`` (x, y) into ``frame`` ``[H, W, 3]``, in place.

    ``eye`` is ``(x, y, heading)``. Columns where a wall is nearer than the pillar
    (``depth_buffer`` ``[W]``) stay hidden. The pillar is shaded like a lit cylinder.
    """
    x, y, heading = eye
    rel_x, rel_y = target[0] - x, target[1] - y
    cos_h, sin_h = math.cos(heading), math.sin(heading)
    depth = rel_x * cos_h + rel_y * sin_h
    if depth < 0.05:
        return
    lateral = -rel_x * sin_h + rel_y * cos_h
    center = camera.width / 2.0 + camera.focal * lateral / depth
    half_width = camera.focal * GOAL_RADIUS / depth
    first = max(0, int(math.floor(center - half_width)))
    last = min(camera.width, int(math.ceil(center + half_width)))
    if first >= last:
        return
    cols = np.arange(first, last)
    offset = (cols + 0.5 - center) / half_width
    visible = (np.abs(offset) < 1.0) & (depth < depth_buffer[cols])
    if not visible.any():
        return
    cols, offset = cols[visible], offset[visible]
    horizon = camera.height / 2.0 + shift
    bottom = horizon + 0.5 * camera.focal / depth
    top = horizon + (0.5 - GOAL_HEIGHT) * camera.focal / depth
    row0 = max(0, int(math.ceil(top - 0.5)))
    row1 = min(camera.height, int(math.ceil(bottom - 0.5)))
    if row0 >= row1:
        return
    light = 0.55 + 0.45 * np.sqrt(1.0 - offset**2)  # [n_cols]
    colors = np.clip(np.outer(light, GOAL_RGB), 0, 255).astype(np.uint8)  # [n_cols, 3]
    frame[row0:row1, cols] = colors[None, :, :]
