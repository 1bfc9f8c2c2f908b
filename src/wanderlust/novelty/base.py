"""The novelty interface shared by every intrinsic-reward module.

Shapes: ``B`` is a batch of transitions; observations are uint8 tensors ``[B, C, H, W]`` where
``C = frame_stack * channels_per_frame`` and the newest frame is the last ``channels_per_frame``
channels. Actions are ``[B, A]`` float (Box, the squashed action in [-1, 1] that the env received)
or ``[B]`` int64 (Discrete).

Contract:
- ``reward(obs, next_obs, actions, episode_ends)`` returns the raw novelty ``[B]`` (float32, >= 0
  for every module) of the transition ``obs -> next_obs`` caused by ``actions``. ``next_obs`` is
  the frame the action produced: for a transition that ended an episode it is the final
  observation, never the reset one. No gradient flows out of it (it is a reward).
- Modules with ``sequential = True`` keep per-env memory (pixel history, episodic memory): the
  trainer calls them once per env step with ``B == num_envs`` in env order, and
  ``episode_ends[i]`` (bool) tells that env ``i``'s episode ended with this transition, so its
  memory is cleared *after* the reward is computed. Modules with ``sequential = False`` are
  called once per rollout on the flattened ``[T * N]`` batch (``episode_ends`` may be ignored).
- ``update(batch)`` trains the module's own models on a rollout and returns metrics named
  ``novelty/<something>`` (floats). Modules without learned parts return ``{}``.
- ``state_dict()`` / ``load_state_dict()``: everything needed for exact resume (weights,
  optimizer, normalizers, memories). Values are tensors, numbers, strings, lists or dicts.
- Scaling by the running std of the intrinsic return is done by the trainer, not here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch


@dataclass(frozen=True)
class ObsSpec:
    """What a novelty module needs to know about observations."""

    shape: tuple[int, ...]
    """(C, H, W) of one image observation, C = frame_stack * channels_per_frame; or (D,) of a vector
    observation (only ``rnd`` and ``none`` accept vectors)."""
    channels_per_frame: int
    """1 for grayscale, 3 for RGB (1 for vectors, unused)."""


@dataclass(frozen=True)
class NoveltyBatch:
    """A rollout flattened to ``B = T * N`` transitions, on the module's device."""

    obs: torch.Tensor
    """[B, C, H, W] uint8."""
    next_obs: torch.Tensor
    """[B, C, H, W] uint8, the frame each action produced (final obs at episode ends)."""
    actions: torch.Tensor
    """[B, A] float32 or [B] int64."""
    episode_ends: torch.Tensor | None = None
    """[B] bool, or None when unknown: the transition ended its env's episode."""
    num_envs: int | None = None
    """N when the batch is a rollout flattened time-major (index ``t * N + n``), else None; with
    ``episode_ends`` it lets a module follow each env through time (the episodic module's
    temporal embedding loss)."""


@runtime_checkable
class NoveltyModule(Protocol):
    name: str
    sequential: bool

    def reward(
        self, obs: torch.Tensor, next_obs: torch.Tensor, actions: torch.Tensor, episode_ends: torch.Tensor
    ) -> torch.Tensor: ...

    def update(self, batch: NoveltyBatch) -> dict[str, float]: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


def newest_frame(obs: torch.Tensor, channels_per_frame: int) -> torch.Tensor:
    """``[B, C, H, W]`` -> the newest frame ``[B, channels_per_frame, H, W]``."""
    return obs[:, -channels_per_frame:]


def to_grayscale(frame: torch.Tensor) -> torch.Tensor:
    """``[B, 1 or 3, H, W]`` (any dtype) -> float32 ``[B, H, W]`` in the frame's value range.

    RGB uses the ITU-R 601 luma weights (as PIL's ``convert("L")``, which the seed used).
    """
    frame = frame.to(torch.float32)
    if frame.shape[1] == 1:
        return frame[:, 0]
    weights = torch.tensor([0.299, 0.587, 0.114], dtype=torch.float32, device=frame.device)
    return torch.einsum("bchw,c->bhw", frame, weights)
