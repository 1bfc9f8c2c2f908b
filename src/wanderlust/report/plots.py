"""Report images: matplotlib figures (Agg, no pyplot state) and Pillow GIFs, returned as bytes.

Shapes: ``T`` steps, ``S`` maze cells per side, frames ``[H, W, 3]`` uint8 RGB.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter
from PIL import Image, ImageDraw

from wanderlust.envs.maze import MazeLayout
from wanderlust.report.data import CurveGroup
from wanderlust.report.record import EpisodeRecord

DPI = 100


def figure_png(figure: Figure) -> bytes:
    """Render ``figure`` to PNG bytes."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def image_png(image: np.ndarray) -> bytes:
    """``[H, W, 3]`` uint8 -> PNG bytes."""
    buffer = io.BytesIO()
    Image.fromarray(np.asarray(image, dtype=np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def curve_group_png(group: CurveGroup, columns: int = 3) -> bytes:
    """One panel per metric of ``group`` (value against env steps); ValueError if it has no data."""
    if not group.series:
        raise ValueError(f"curve group '{group.title}' has no data to plot")
    count = len(group.series)
    cols = min(columns, count)
    rows = math.ceil(count / cols)
    figure = Figure(figsize=(4.2 * cols, 2.8 * rows), layout="constrained")
    for i, (name, (steps, values)) in enumerate(group.series.items()):
        axes = figure.add_subplot(rows, cols, i + 1)
        axes.plot(steps, values, marker="o" if len(steps) <= 30 else None, markersize=3, linewidth=1.5)
        axes.set_title(name, fontsize=10)
        axes.set_xlabel("env steps", fontsize=8)
        axes.tick_params(labelsize=8)
        axes.grid(alpha=0.3)
        if name.endswith("coverage"):
            axes.yaxis.set_major_formatter(PercentFormatter(1.0))
    figure.suptitle(group.title, fontsize=12)
    return figure_png(figure)


def maze_map_png(records: Sequence[EpisodeRecord], counts: Sequence[np.ndarray]) -> bytes:
    """One panel per maze episode: steps spent in each cell (heatmap), walls, trajectory from
    ``info['pose']`` (start o, end x), goal *. ``counts[i]`` is episode ``i``'s ``[S, S]`` grid."""
    if not records or len(records) != len(counts):
        raise ValueError(f"need one count grid per episode, got {len(records)} episodes and {len(counts)} grids")
    figure = Figure(figsize=(4.0 * len(records) + 0.8, 4.2), layout="constrained")
    image = None
    for i, (record, grid) in enumerate(zip(records, counts)):
        if record.maze is None or record.poses is None:
            raise ValueError("maze_map_png needs maze episodes (record.maze is None)")
        size = record.maze.layout.size
        axes = figure.add_subplot(1, len(records), i + 1)
        image = axes.imshow(np.ma.masked_equal(grid, 0), cmap="viridis", extent=(0, size, size, 0),
                            vmin=1, vmax=max(int(max(g.max() for g in counts)), 2), interpolation="nearest")
        axes.set_facecolor((0.88, 0.88, 0.88))
        axes.add_collection(LineCollection(wall_segments(record.maze.layout), colors="black", linewidths=2))
        x, y = record.poses[:, 0], record.poses[:, 1]
        axes.plot(x, y, color="white", linewidth=1.2, alpha=0.9)
        axes.plot(x, y, color="tab:red", linewidth=0.6, alpha=0.9)
        axes.plot(x[0], y[0], "o", color="tab:green", markersize=7, markeredgecolor="black")
        axes.plot(x[-1], y[-1], "X", color="tab:red", markersize=8, markeredgecolor="black")
        if record.maze.goal is not None:
            axes.plot(*record.maze.goal, "*", color="gold", markersize=12, markeredgecolor="black")
        axes.set_xlim(0, size)
        axes.set_ylim(size, 0)
        axes.set_aspect("equal")
        axes.set_xticks([])
        axes.set_yticks([])
        coverage = f"{record.coverage:.0%}" if record.coverage is not None else "?"
        axes.set_title(f"episode {i}: {record.steps} steps, coverage {coverage}", fontsize=10)
    figure.colorbar(image, ax=figure.axes, shrink=0.8, label="steps in cell")
    return figure_png(figure)


def wall_segments(layout: MazeLayout) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """Line segments ``((x0, y0), (x1, y1))`` of every wall of a :class:`MazeLayout`."""
    segments = [((i, r), (i, r + 1)) for r, i in zip(*np.nonzero(layout.vertical_walls))]
    segments += [((c, j), (c + 1, j)) for j, c in zip(*np.nonzero(layout.horizontal_walls))]
    return [((float(a), float(b)), (float(c), float(d))) for (a, b), (c, d) in segments]


def novel_frames_png(frames: np.ndarray, scores: np.ndarray, most: np.ndarray, least: np.ndarray) -> bytes:
    """Two rows of frames with their step and novelty: ``most`` (indices into ``frames [T, H, W, 3]``
    and ``scores [T]``) on top, ``least`` below."""
    if len(most) == 0:
        raise ValueError("no frames to show: the episode has no transitions")
    rows = [("most novel", most)] + ([("least novel", least)] if len(least) else [])
    cols = max(len(indices) for _, indices in rows)
    figure = Figure(figsize=(1.9 * cols + 0.6, 2.2 * len(rows)), layout="constrained")
    for r, (label, indices) in enumerate(rows):
        for c, index in enumerate(indices):
            axes = figure.add_subplot(len(rows), cols, r * cols + c + 1)
            axes.imshow(frames[index], interpolation="nearest")
            axes.set_xticks([])
            axes.set_yticks([])
            axes.set_title(f"t={index + 1}  {scores[index]:.3g}", fontsize=9)
            if c == 0:
                axes.set_ylabel(label, fontsize=10)
    return figure_png(figure)


def novelty_trace_png(scores: np.ndarray, marked: np.ndarray) -> bytes:
    """Novelty of each transition of one episode (``scores [T]``), ``marked`` indices circled."""
    figure = Figure(figsize=(9.0, 2.6), layout="constrained")
    axes = figure.add_subplot(1, 1, 1)
    steps = np.arange(1, len(scores) + 1)
    axes.plot(steps, scores, linewidth=1.2)
    axes.plot(steps[marked], scores[marked], "o", fillstyle="none", color="tab:red")
    axes.set_xlabel("step of the evaluation episode")
    axes.set_ylabel("raw novelty")
    axes.grid(alpha=0.3)
    return figure_png(figure)


def caption_frame(image: np.ndarray, text: str, height: int = 14) -> np.ndarray:
    """``[H, W, 3]`` -> ``[H + height, W, 3]`` with ``text`` written in a white band below."""
    band = Image.new("RGB", (image.shape[1], height), (255, 255, 255))
    ImageDraw.Draw(band).text((3, 1), text, fill=(0, 0, 0))
    return np.concatenate([np.asarray(image, dtype=np.uint8), np.asarray(band)], axis=0)


def side_by_side(images: Sequence[np.ndarray], gap: int = 4) -> np.ndarray:
    """``[H_i, W_i, 3]`` images in one row, top-aligned, on white: ``[max H, sum W + gaps, 3]``."""
    height = max(image.shape[0] for image in images)
    width = sum(image.shape[1] for image in images) + gap * (len(images) - 1)
    row = np.full((height, width, 3), 255, dtype=np.uint8)
    x = 0
    for image in images:
        row[: image.shape[0], x: x + image.shape[1]] = image
        x += image.shape[1] + gap
    return row


def animated_gif(frames: Sequence[np.ndarray], fps: float) -> bytes:
    """``F`` frames ``[H, W, 3]`` uint8 (same size) -> a looping GIF at ``fps`` frames per second."""
    if not frames:
        raise ValueError("an animation needs at least one frame")
    images = [Image.fromarray(np.asarray(frame, dtype=np.uint8)) for frame in frames]
    buffer = io.BytesIO()
    images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:],
                   duration=max(20, int(round(1000.0 / fps))), loop=0)
    return buffer.getvalue()
