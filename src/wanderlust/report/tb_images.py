"""TensorBoard image summaries during training: the coverage heatmap and the most / least novel frames.

Shapes: ``T`` steps per rollout, ``N`` envs, observations ``[C, H, W]`` uint8, ``S`` maze cells per side.

Wiring in a training loop (what ``algo/trainer.py`` does once per ``image_every`` updates)::

    visits = VisitCounter(config.env.maze_size)          # maze envs only
    ... on every env step: visits.observe(infos)
    log_run_images(logger, global_step, visits.counts,
                   novel_frames_image(storage.next_obs, raw_intrinsic, channels_per_frame))
"""

from __future__ import annotations

import numpy as np
import torch

from wanderlust.report.data import agent_view, frame_strip, heatmap_rgb, rank_novelty, stack_rows, upscale
from wanderlust.runtime.logger import MetricLogger

HEATMAP_TAG = "images/coverage_heatmap"
NOVEL_FRAMES_TAG = "images/novel_frames"
HEATMAP_PIXELS = 256
"""Side of the heatmap image (cells are whole squares of about this / S pixels)."""


def novel_frames_image(
    next_obs: torch.Tensor | np.ndarray, raw_intrinsic: torch.Tensor | np.ndarray, channels_per_frame: int,
    k: int = 8, scale: int = 2,
) -> np.ndarray:
    """``[h, w, 3]`` uint8: the ``k`` frames of a rollout with the highest raw novelty (top row, most
    novel first) and the ``k`` with the lowest (bottom row), each upscaled ``scale`` times.

    Args:
        next_obs: ``[T, N, C, H, W]`` (or ``[B, C, H, W]``) uint8, the frames the actions produced.
        raw_intrinsic: ``[T, N]`` (or ``[B]``) novelty of those frames, before normalization.
            Only the ``2 k`` chosen frames are copied off the device.
        channels_per_frame: 1 (grayscale) or 3 (RGB); the newest frame of each stack is shown.
    """
    scores = raw_intrinsic.cpu().numpy() if isinstance(raw_intrinsic, torch.Tensor) else np.asarray(raw_intrinsic)
    scores = scores.reshape(-1)
    frames = next_obs.reshape(-1, *next_obs.shape[-3:])  # [B, C, H, W]; a view for contiguous tensors
    if len(frames) != len(scores):
        raise ValueError(f"{len(frames)} frames but {len(scores)} novelty scores; pass matching [T, N] rollouts")
    most, least = rank_novelty(scores, k)
    rows = []
    for indices in (most, least):
        if len(indices):
            picked = frames[torch.from_numpy(indices)] if isinstance(frames, torch.Tensor) else frames[indices]
            picked = picked.cpu().numpy() if isinstance(picked, torch.Tensor) else np.asarray(picked)
            rows.append(frame_strip(upscale_all(agent_view(picked, channels_per_frame), scale)))
    return stack_rows(rows)


def upscale_all(frames: np.ndarray, scale: int) -> np.ndarray:
    """``[K, H, W, 3]`` -> ``[K, H * scale, W * scale, 3]`` (nearest neighbour)."""
    return np.stack([upscale(frame, scale) for frame in frames])


def log_run_images(
    logger: MetricLogger, step: int, visit_counts: np.ndarray | None = None, novel_frames: np.ndarray | None = None,
) -> list[str]:
    """Write the coverage heatmap of ``visit_counts [S, S]`` (see ``VisitCounter``) and the
    ``novel_frames`` image (see :func:`novel_frames_image`) to TensorBoard at ``step``; either may
    be None (not a maze env / no frames). Returns the tags written."""
    tags = []
    if visit_counts is not None:
        size = np.asarray(visit_counts).shape[0]
        logger.log_image(step, HEATMAP_TAG, heatmap_rgb(visit_counts, max(1, HEATMAP_PIXELS // size)))
        tags.append(HEATMAP_TAG)
    if novel_frames is not None:
        logger.log_image(step, NOVEL_FRAMES_TAG, novel_frames)
        tags.append(NOVEL_FRAMES_TAG)
    return tags
