"""Intrinsic rewards: pixel, rnd, icm, episodic (see base.py for the interface)."""

from __future__ import annotations

from dataclasses import dataclass, field

import gymnasium
import torch

from wanderlust.novelty.base import NoveltyBatch, NoveltyModule, ObsSpec
from wanderlust.novelty.episodic import EpisodicConfig, EpisodicNovelty
from wanderlust.novelty.icm import ICMConfig, ICMNovelty
from wanderlust.novelty.none import NoNovelty
from wanderlust.novelty.pixel import PixelConfig, PixelNovelty
from wanderlust.novelty.rnd import RNDConfig, RNDNovelty

NOVELTY_NAMES = ("pixel", "rnd", "icm", "episodic", "none")
VECTOR_UNSUPPORTED = ("pixel", "icm", "episodic")
"""Modules that read frames and refuse vector observations."""


@dataclass
class NoveltyConfig:
    """Hyperparameters of every novelty module (only the chosen one is used)."""

    pixel: PixelConfig = field(default_factory=PixelConfig)
    """Mean absolute grayscale difference to the last K frames."""
    rnd: RNDConfig = field(default_factory=RNDConfig)
    """Random Network Distillation."""
    icm: ICMConfig = field(default_factory=ICMConfig)
    """Intrinsic Curiosity Module."""
    episodic: EpisodicConfig = field(default_factory=EpisodicConfig)
    """NGU-style episodic memory."""


def make_novelty(
    name: str, config: NoveltyConfig, obs_spec: ObsSpec, action_space: gymnasium.spaces.Space, num_envs: int,
    device: torch.device | str,
) -> NoveltyModule:
    """Build the novelty module called ``name`` (one of :data:`NOVELTY_NAMES`).

    Vector observations (``obs_spec.shape == (D,)``) work with ``rnd`` (an MLP variant) and ``none``.
    """
    if len(obs_spec.shape) == 1 and name in VECTOR_UNSUPPORTED:
        raise ValueError(f"novelty '{name}' needs image observations; use 'rnd' or 'none' for vector observations")
    if name == "pixel":
        return PixelNovelty(obs_spec, num_envs, config.pixel, device)
    if name == "rnd":
        return RNDNovelty(obs_spec, config.rnd, device)
    if name == "icm":
        return ICMNovelty(obs_spec, action_space, config.icm, device)
    if name == "episodic":
        return EpisodicNovelty(obs_spec, action_space, num_envs, config.episodic, device)
    if name == "none":
        return NoNovelty(device)
    raise ValueError(f"unknown novelty '{name}'; choose one of {', '.join(NOVELTY_NAMES)}")


__all__ = [
    "NOVELTY_NAMES", "EpisodicConfig", "EpisodicNovelty", "ICMConfig", "ICMNovelty", "NoNovelty", "NoveltyBatch",
    "NoveltyConfig", "NoveltyModule", "ObsSpec", "PixelConfig", "PixelNovelty", "RNDConfig", "RNDNovelty",
    "make_novelty",
]
