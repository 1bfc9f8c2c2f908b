"""Colours and textures of the maze, baked into lookup tables so rendering is one gather.

Every wall texel colour the renderer can produce is precomputed in a table indexed by
``(region, side, fog level, v texel, u texel)``:

- ``region``: each block of the maze (see ``layout.region_map``) has its own hue and one of
  four texture patterns (bricks, planks, bands, panels), so views differ from place to place;
- ``side``: 0 for walls on vertical grid lines (``x = const``), 1 for horizontal ones, which
  are drawn darker (SIDE_SHADE) so corners read clearly;
- ``fog level``: distance bucket; far walls fade towards black (``fog_factor``);
- ``v, u``: texel row (wall height) and column (along the wall) in a TEX x TEX pattern.
"""

from __future__ import annotations

import colorsys
import math
from functools import lru_cache

import numpy as np

TEX = 16
"""Texels per side of a wall texture."""
FOG_LEVELS = 32
"""Number of distance buckets for wall shading."""
LEVELS_PER_UNIT = 2.0
"""Fog buckets per world unit: bucket = min(FOG_LEVELS - 1, floor(distance * LEVELS_PER_UNIT))."""
SIDE_SHADE = 0.7
"""Brightness of walls on horizontal grid lines relative to vertical ones."""
FLOOR_RGB = (125, 112, 96)
"""Floor colour at distance 0 (warm grey)."""
CEILING_RGB = (92, 100, 128)
"""Ceiling colour at distance 0 (cool grey)."""
GOAL_RGB = (235, 25, 25)
"""Colour of the goal pillar: bright red, a hue no wall uses."""


def fog_factor(distance: np.ndarray | float) -> np.ndarray:
    """Brightness multiplier in (0.2, 1] for a surface ``distance`` units away: 1 / (1 + 0.15 d)."""
    return np.maximum(0.2, 1.0 / (1.0 + 0.15 * np.asarray(distance, dtype=np.float64)))


def hue_stride(n_regions: int) -> int:
    """Step through the hue circle so consecutive region ids get far-apart hues.

    The largest ``k <= n / 2`` coprime with ``n`` (1 when ``n <= 2``), so that
    ``(region * k) % n`` is a permutation.
    """
    for k in range(n_regions // 2, 1, -1):
        if math.gcd(k, n_regions) == 1:
            return k
    return 1


def region_colors(n_regions: int) -> np.ndarray:
    """``[n_regions, 3]`` float RGB in [0, 1]: distinct hues between 40 and 320 degrees.

    Region ``i`` takes hue number ``(i * hue_stride(n)) % n`` of ``n`` evenly spaced hues, so
    neighbouring regions differ strongly. Pure red (hue 0) is left out so the goal pillar is
    the only red thing in view.
    """
    hues = np.linspace(40.0, 320.0, n_regions) if n_regions > 1 else np.array([40.0])
    order = (np.arange(n_regions) * hue_stride(n_regions)) % n_regions
    return np.array([colorsys.hsv_to_rgb(h / 360.0, 0.55, 0.9) for h in hues[order]])


def wall_patterns() -> np.ndarray:
    """``[4, TEX, TEX]`` float brightness in [0.5, 1] indexed ``[pattern, v, u]``.

    0 bricks (staggered rows with mortar), 1 vertical planks, 2 horizontal bands,
    3 framed panels.
    """
    v, u = np.meshgrid(np.arange(TEX), np.arange(TEX), indexing="ij")
    half = TEX // 2
    bricks = np.ones((TEX, TEX))
    bricks[v % (TEX // 4) == 0] = 0.55
    offset = np.where((v // (TEX // 4)) % 2 == 0, 0, half)
    bricks[(u + offset) % half == 0] = 0.55
    planks = np.where(u % (TEX // 4) == 0, 0.5, 0.85 + 0.15 * ((u // (TEX // 4)) % 2))
    bands = np.where((v // (TEX // 4)) % 2 == 0, 1.0, 0.72)
    panels = np.where((u % half == 0) | (v % half == 0), 0.55, 1.0)
    panels = np.where(((u % half) - half / 2) ** 2 + ((v % half) - half / 2) ** 2 < 4, 0.75, panels)
    return np.stack([bricks, planks, bands, panels]).astype(np.float64)


@lru_cache(maxsize=8)
def wall_table(n_regions: int) -> np.ndarray:
    """``[n_regions * 2 * FOG_LEVELS * TEX * TEX, 3]`` uint8: every wall texel colour.

    Flat row index: ``(((region * 2 + side) * FOG_LEVELS + level) * TEX + v) * TEX + u``.
    """
    colors = region_colors(n_regions)  # [R, 3]
    patterns = wall_patterns()[np.arange(n_regions) % 4]  # [R, TEX, TEX]
    side = np.array([1.0, SIDE_SHADE])  # [2]
    fog = fog_factor((np.arange(FOG_LEVELS) + 0.5) / LEVELS_PER_UNIT)  # [L]
    table = (
        colors[:, None, None, None, None, :]
        * side[None, :, None, None, None, None]
        * fog[None, None, :, None, None, None]
        * patterns[:, None, None, :, :, None]
    )
    table = np.clip(np.round(table * 255.0), 0, 255).astype(np.uint8)
    table = np.ascontiguousarray(table.reshape(-1, 3))
    table.setflags(write=False)
    return table


def background(height: int, focal: float, max_shift: int) -> np.ndarray:
    """``[height + 2 * max_shift, 3]`` uint8 row colours: ceiling above, floor below a horizon.

    The horizon lies ``max_shift + height / 2`` rows from the top, so the ``height`` rows
    starting at ``max_shift - shift`` are the backdrop of a frame whose horizon is ``shift``
    rows below the centre. A row ``o`` pixels from the horizon shows floor/ceiling at
    distance ``0.5 * focal / o`` (eye at half wall height), shaded by ``fog_factor``.
    """
    rows = height + 2 * max_shift
    offset = np.arange(rows) + 0.5 - (max_shift + height / 2.0)  # [rows], >0 below horizon
    distance = 0.5 * focal / np.maximum(np.abs(offset), 1e-6)
    shade = fog_factor(distance)[:, None]  # [rows, 1]
    rgb = np.where(offset[:, None] > 0, np.array(FLOOR_RGB), np.array(CEILING_RGB)) * shade
    return np.clip(np.round(rgb), 0, 255).astype(np.uint8)


def max_horizon_shift(focal: float, max_pitch: float) -> int:
    """Largest horizon shift in rows for a pitch of ``max_pitch`` radians (plus one row)."""
    return int(math.ceil(focal * math.tan(max_pitch))) + 1
