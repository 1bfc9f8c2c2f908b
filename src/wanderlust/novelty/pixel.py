"""Pixel novelty: the seed's metric done right.

The reward of ``obs -> next_obs`` in env ``i`` is the mean absolute grayscale difference (in [0, 1])
between the new frame and each of the last ``K`` frames env ``i`` saw in this episode, averaged over
those frames and all pixels. The new frame joins the history only *after* it has been scored (the
seed compared a frame with a history that already contained it, which biased every reward towards
zero).

``aggregate="nearest"`` scores the new frame by its distance to the *closest* of those frames
instead of their mean. The seed's mean pays for any view unlike the average of the last ``K``, so
spinning on the spot, whose views cycle, earns as much as walking; the nearest frame pays nothing
for a view already seen this episode (a nearest-neighbour count, as in episodic novelty).

Shapes: ``N`` envs, ``K`` history length, ``H, W`` frame size.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from wanderlust.novelty.base import NoveltyBatch, ObsSpec, newest_frame, to_grayscale
from wanderlust.novelty.memory import PerEnvMemory, history_mask
from wanderlust.novelty.support import check_obs_spec, check_step

__all__ = ["PIXEL_AGGREGATES", "PixelConfig", "PixelNovelty", "gray_frames", "history_mask", "mean_abs_difference"]

PIXEL_AGGREGATES = ("mean", "nearest")
"""How the distances to the ``K`` history frames become one reward: their mean (the seed's) or the smallest."""


@dataclass
class PixelConfig:
    """Hyperparameters of :class:`PixelNovelty`."""

    history: int = 50
    """K: how many of the env's most recent frames (this episode) the new frame is compared with."""
    aggregate: str = "mean"
    """'mean' of the distances to those frames (the seed's metric) or the 'nearest' frame's distance."""


def gray_frames(obs: torch.Tensor, channels_per_frame: int) -> torch.Tensor:
    """uint8 ``[B, C, H, W]`` -> the newest frame as uint8 grayscale ``[B, H, W]``.

    RGB is converted with the ITU-R 601 luma weights and rounded to integers, like PIL's
    ``convert("L")`` that the seed used.
    """
    gray = to_grayscale(newest_frame(obs, channels_per_frame))
    return gray.round().clamp(0, 255).to(torch.uint8)


def mean_abs_difference(
    frame: torch.Tensor, history: torch.Tensor, filled: torch.Tensor, aggregate: str = "mean"
) -> torch.Tensor:
    """Mean absolute difference, scaled to [0, 1], of each frame to its env's filled history slots.

    ``frame [N, H, W]``, ``history [N, K, H, W]`` (0..255), ``filled [N, K]`` bool -> ``[N]`` float32:
    the mean (``aggregate="mean"``) or the minimum (``"nearest"``) over filled slots of the per-pixel
    mean ``|frame - slot| / 255``; 0 where nothing is filled.
    """
    num_envs, capacity, height, width = history.shape
    pixels = height * width
    # L1 distance via cdist: [N, 1, H*W] x [N, K, H*W] -> [N, 1, K] (much faster than abs().mean()).
    per_slot = torch.cdist(
        frame.to(torch.float32).reshape(num_envs, 1, pixels),
        history.to(torch.float32).reshape(num_envs, capacity, pixels),
        p=1.0,
    )[:, 0] / (pixels * 255.0)
    if aggregate == "nearest":
        nearest = per_slot.masked_fill(~filled, float("inf")).amin(dim=1)
        return torch.where(filled.any(dim=1), nearest, torch.zeros_like(nearest))
    weights = filled.to(torch.float32)
    return (per_slot * weights).sum(dim=1) / weights.sum(dim=1).clamp_min(1.0)


class PixelNovelty:
    """Mean absolute grayscale difference to the env's last ``K`` frames, their mean or the nearest (no learned parts)."""

    name = "pixel"
    sequential = True

    def __init__(self, obs_spec: ObsSpec, num_envs: int, config: PixelConfig, device: torch.device | str) -> None:
        check_obs_spec(obs_spec)
        if config.history < 1:
            raise ValueError(f"pixel history must be >= 1 frame, got {config.history}")
        if config.aggregate not in PIXEL_AGGREGATES:
            raise ValueError(f"novelty.pixel.aggregate must be one of {', '.join(PIXEL_AGGREGATES)}, "
                             f"got '{config.aggregate}'")
        self.obs_spec = obs_spec
        self.num_envs = num_envs
        self.config = config
        self.device = torch.device(device)
        _, height, width = obs_spec.shape
        self.history = PerEnvMemory(num_envs, config.history, (height, width), self.device, saved_dtype=torch.uint8)
        """Each env's last K grayscale frames ``[N, K, H, W]`` (integers 0..255 kept as float32 for speed;
        saved as uint8)."""

    @property
    def counts(self) -> torch.Tensor:
        """[N] frames written to each env's history since its episode began (0 = empty)."""
        return self.history.counts

    def reward(
        self, obs: torch.Tensor, next_obs: torch.Tensor, actions: torch.Tensor, episode_ends: torch.Tensor
    ) -> torch.Tensor:
        """``[N]`` novelty of each env's new frame (newest frame of ``next_obs``) against its history."""
        ends = check_step(obs, next_obs, episode_ends, self.obs_spec, self.num_envs, self.device)
        channels = self.obs_spec.channels_per_frame
        with torch.no_grad():
            new_frame = gray_frames(next_obs.to(self.device), channels).to(torch.float32)  # [N, H, W]
            # first step of an episode: compare against the start frame
            self.history.fill_empty(obs, lambda start: gray_frames(start, channels))
            novelty = mean_abs_difference(new_frame, self.history.entries, self.history.mask(), self.config.aggregate)
            self.history.push(new_frame)
            self.history.clear(ends)
        return novelty

    def update(self, batch: NoveltyBatch) -> dict[str, float]:
        """Nothing to train."""
        return {}

    def state_dict(self) -> dict:
        """``{"frames": uint8 [N, K, H, W], "counts": [N]}``."""
        history = self.history.state_dict()
        return {"frames": history["entries"], "counts": history["counts"]}

    def load_state_dict(self, state: dict) -> None:
        self.history.load_state_dict({"entries": state["frames"], "counts": state["counts"]})
