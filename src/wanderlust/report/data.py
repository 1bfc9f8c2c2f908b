"""Pure functions that turn a run's records into arrays for plots and images (numpy only).

Shapes: ``T`` steps of one episode, ``S`` maze cells per side, frames ``[H, W, 3]`` uint8 RGB
(display) or ``[C, H, W]`` uint8 (what the agent gets, ``C = frame_stack * channels_per_frame``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

UNVISITED_RGB = (215, 215, 215)
"""Heatmap colour of cells never entered."""


@dataclass(frozen=True)
class CurveGroup:
    """One plot of the report: related metrics, each with its finite points."""

    title: str
    """Plot title, e.g. ``"Novelty"``."""
    series: dict[str, tuple[np.ndarray, np.ndarray]]
    """Metric name -> (steps ``[K]``, values ``[K]``), only metrics with at least one finite value."""

    @property
    def points(self) -> int:
        """Finite points over all metrics of the group."""
        return sum(len(steps) for steps, _ in self.series.values())


CURVE_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Coverage", ("charts/coverage",)),
    ("Returns", ("charts/episodic_return", "charts/episodic_length")),
    ("Novelty", ("novelty/",)),
    ("Losses", ("losses/",)),
    ("Speed", ("charts/SPS",)),
    ("Other charts", ("charts/",)),
)
"""Report plots in order: a name ending in ``/`` takes every metric with that prefix that no earlier
group took (``Other charts``: learning rate, the real-time runner's actor rate, ...)."""

SKIPPED_METRICS = ("losses/minibatch_updates",)
"""Bookkeeping counters that are not learning curves."""


def finite_series(rows: Sequence[Mapping[str, float]], name: str) -> tuple[np.ndarray, np.ndarray]:
    """(steps ``[K]`` int64, values ``[K]`` float64) of metric ``name`` over ``rows`` (``read_metrics``
    output), keeping only rows where it is present and finite."""
    steps, values = [], []
    for row in rows:
        value = row.get(name)
        if isinstance(value, (int, float)) and math.isfinite(value):
            steps.append(int(row["step"]))
            values.append(float(value))
    return np.asarray(steps, dtype=np.int64), np.asarray(values, dtype=np.float64)


def curve_groups(rows: Sequence[Mapping[str, float]]) -> list[CurveGroup]:
    """One :class:`CurveGroup` per entry of :data:`CURVE_GROUPS` (empty ``series`` if nothing was logged)."""
    names = sorted({key for row in rows for key in row if key not in ("step", "time")} - set(SKIPPED_METRICS))
    groups, used = [], set()
    for title, patterns in CURVE_GROUPS:
        chosen: list[str] = []
        for pattern in patterns:
            if pattern.endswith("/"):
                chosen += [name for name in names if name.startswith(pattern) and name not in used]
            elif pattern in names:
                chosen.append(pattern)
        used.update(chosen)
        series = {}
        for name in chosen:
            steps, values = finite_series(rows, name)
            if len(steps):
                series[name] = (steps, values)
        groups.append(CurveGroup(title, series))
    return groups


def visit_counts(cells: np.ndarray, size: int) -> np.ndarray:
    """``[S, S]`` int64: how many of the ``[T, 2]`` (row, col) cells fall in each cell."""
    cells = np.asarray(cells, dtype=np.int64).reshape(-1, 2)
    if len(cells) and (cells.min() < 0 or cells.max() >= size):
        raise ValueError(f"cells must lie in [0, {size}) for a maze of size {size}; got {cells.min()}..{cells.max()}")
    counts = np.zeros((size, size), dtype=np.int64)
    np.add.at(counts, (cells[:, 0], cells[:, 1]), 1)
    return counts


def rank_novelty(scores: np.ndarray, k: int, min_separation: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Indices of up to ``k`` most novel (descending) and ``k`` least novel (ascending) entries of
    ``scores [T]``.

    Picked greedily: each index is at least ``min_separation`` steps away from the ones already in
    its list (so a strip does not show the same moment six times). No index is in both lists: with
    fewer than ``2 k`` scores the most novel list takes at most ``ceil(T / 2)``, the least novel at
    most ``floor(T / 2)``. Ties keep time order.
    """
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if k < 1 or min_separation < 1:
        raise ValueError(f"k and min_separation must be >= 1, got {k} and {min_separation}")
    if not np.isfinite(scores).all():
        raise ValueError("novelty scores contain NaN/inf; check the novelty module's state")
    most = _spread(np.argsort(-scores, kind="stable"), min(k, (len(scores) + 1) // 2), min_separation, set())
    least = _spread(np.argsort(scores, kind="stable"), min(k, len(scores) // 2), min_separation, set(most.tolist()))
    return most, least


def _spread(order: np.ndarray, count: int, min_separation: int, taken: set[int]) -> np.ndarray:
    """The first ``count`` indices of ``order`` not in ``taken`` and ``min_separation`` apart."""
    chosen: list[int] = []
    for index in order.tolist():
        if len(chosen) == count:
            break
        if index not in taken and all(abs(index - other) >= min_separation for other in chosen):
            chosen.append(index)
    return np.asarray(chosen, dtype=np.int64)


def agent_view(obs: np.ndarray, channels_per_frame: int) -> np.ndarray:
    """``[..., C, H, W]`` agent observations -> their newest frame as ``[..., H, W, 3]`` uint8 RGB
    (grayscale frames are repeated over the three channels)."""
    obs = np.asarray(obs)
    if obs.ndim < 3 or channels_per_frame not in (1, 3) or obs.shape[-3] % channels_per_frame:
        raise ValueError(f"expected [..., C, H, W] frames with C a multiple of {channels_per_frame}, got {obs.shape}")
    newest = np.moveaxis(obs[..., -channels_per_frame:, :, :], -3, -1)
    if channels_per_frame == 1:
        newest = np.repeat(newest, 3, axis=-1)
    return np.ascontiguousarray(newest, dtype=np.uint8)


def upscale(image: np.ndarray, factor: int) -> np.ndarray:
    """``[H, W, ...]`` -> ``[H * factor, W * factor, ...]`` by repeating pixels (nearest neighbour)."""
    if factor < 1:
        raise ValueError(f"upscale factor must be >= 1, got {factor}")
    return np.repeat(np.repeat(image, factor, axis=0), factor, axis=1)


def frame_strip(frames: np.ndarray, gap: int = 2, fill: int = 255) -> np.ndarray:
    """``[K, H, W, 3]`` -> one row ``[H, K * W + (K - 1) * gap, 3]`` with ``fill`` between frames."""
    frames = np.asarray(frames, dtype=np.uint8)
    if frames.ndim != 4 or len(frames) == 0:
        raise ValueError(f"expected a non-empty [K, H, W, 3] batch of frames, got shape {frames.shape}")
    count, height, width, channels = frames.shape
    strip = np.full((height, count * width + (count - 1) * gap, channels), fill, dtype=np.uint8)
    for i, frame in enumerate(frames):
        strip[:, i * (width + gap): i * (width + gap) + width] = frame
    return strip


def stack_rows(rows: Sequence[np.ndarray], gap: int = 2, fill: int = 255) -> np.ndarray:
    """Images ``[H_i, W_i, 3]`` stacked top to bottom, left-aligned, padded with ``fill`` to the widest,
    ``gap`` rows of ``fill`` between them."""
    if not rows:
        raise ValueError("stack_rows needs at least one image")
    width = max(row.shape[1] for row in rows)
    parts = []
    for i, row in enumerate(rows):
        if i:
            parts.append(np.full((gap, width, 3), fill, dtype=np.uint8))
        parts.append(np.pad(np.asarray(row, dtype=np.uint8), ((0, 0), (0, width - row.shape[1]), (0, 0)),
                            constant_values=fill))
    return np.concatenate(parts, axis=0)


def heatmap_rgb(counts: np.ndarray, cell_pixels: int = 8) -> np.ndarray:
    """``[S, S]`` visit counts -> ``[S * p, S * p, 3]`` uint8: viridis over ``log(1 + count)``
    scaled by the largest count, unvisited cells light grey (:data:`UNVISITED_RGB`)."""
    from matplotlib import colormaps

    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 2 or (counts < 0).any():
        raise ValueError(f"expected a [S, S] grid of counts >= 0, got shape {counts.shape}")
    scale = np.log1p(counts.max()) if counts.max() > 0 else 1.0
    colours = colormaps["viridis"](np.log1p(counts) / scale)[..., :3] * 255.0
    image = np.where(counts[..., None] > 0, colours, np.array(UNVISITED_RGB, dtype=np.float64))
    return upscale(np.round(image).astype(np.uint8), cell_pixels)


def sample_indices(length: int, max_count: int) -> np.ndarray:
    """At most ``max_count`` evenly spaced indices of ``range(length)``, always with the first and
    last (for the frames of an animation)."""
    if length < 1 or max_count < 1:
        raise ValueError(f"need length >= 1 and max_count >= 1, got {length} and {max_count}")
    if length <= max_count:
        return np.arange(length)
    if max_count == 1:
        return np.array([length - 1])
    return np.unique(np.round(np.linspace(0, length - 1, max_count)).astype(np.int64))


class VisitCounter:
    """Counts env steps per maze cell over many episodes from vector-env infos (``info['cell']``).

    With different layouts per episode the grid shows where in the square the agent spends its
    time, not a route; it is what TensorBoard's ``images/coverage_heatmap`` shows.
    """

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"maze size must be >= 1, got {size}")
        self.counts = np.zeros((size, size), dtype=np.int64)
        """``[S, S]`` steps seen in each cell since the last :meth:`reset`."""

    def observe(self, infos: Mapping[str, np.ndarray]) -> None:
        """Add the cells ``infos['cell'] [N, 2]`` of one vector step (envs masked out by ``'_cell'``
        are skipped; infos without ``'cell'`` are ignored)."""
        if "cell" not in infos:
            return
        cells = np.asarray(infos["cell"]).reshape(-1, 2)
        mask = np.asarray(infos.get("_cell", np.ones(len(cells), dtype=bool)), dtype=bool)
        self.counts += visit_counts(cells[mask], self.counts.shape[0])

    def reset(self) -> None:
        self.counts[:] = 0
