"""No intrinsic reward: train on the extrinsic reward alone (a baseline)."""

from __future__ import annotations

import torch

from wanderlust.novelty.base import NoveltyBatch


class NoNovelty:
    """Returns zeros; nothing to train or save."""

    name = "none"
    sequential = False

    def __init__(self, device: torch.device | str) -> None:
        self.device = torch.device(device)

    def reward(
        self, obs: torch.Tensor, next_obs: torch.Tensor, actions: torch.Tensor, episode_ends: torch.Tensor
    ) -> torch.Tensor:
        """``[B]`` zeros (float32)."""
        return torch.zeros(next_obs.shape[0], dtype=torch.float32, device=self.device)

    def update(self, batch: NoveltyBatch) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        if state:
            raise ValueError(f"NoNovelty has no state, got keys {sorted(state)}; was this checkpoint trained "
                             "with another novelty module?")
