"""Random Network Distillation (Burda et al. 2018, "Exploration by Random Network Distillation").

A fixed, randomly initialised target network embeds the new frame; a trainable predictor learns
to reproduce that embedding. Frames the predictor has seen often are predicted well, so the
prediction error is a novelty reward. Network shapes follow the paper and CleanRL's
``ppo_rnd_envpool.py``: inputs are normalised per pixel by running statistics and clipped to
[-5, 5]; the target never receives a gradient and is not given to the optimizer.

Vector observations ``[B, V]`` (CartPole, ...) use an MLP variant of both networks (two hidden
layers of ``VECTOR_HIDDEN``) on the normalised vector; everything else is the same.

Shapes: ``B`` batch, ``c`` input channels (1, or ``C`` with ``all_channels``), ``H, W`` frame size,
``D`` feature size (512), ``V`` length of a vector observation.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from wanderlust.novelty.base import NoveltyBatch, ObsSpec, newest_frame, to_grayscale
from wanderlust.novelty.nets import flat_size, nature_conv, orthogonal_init
from wanderlust.novelty.support import (
    check_obs, check_obs_spec, check_positive, cpu_copy, load_optimizer_state, minibatches, optimizer_state,
)
from wanderlust.runtime.normalize import RunningMeanStd


@dataclass
class RNDConfig:
    """Hyperparameters of :class:`RNDNovelty` (defaults from the paper / CleanRL)."""

    feature_dim: int = 512
    """D: size of the target's (and predictor's) output embedding."""
    all_channels: bool = False
    """Feed the whole frame stack instead of the newest frame in grayscale."""
    obs_clip: float = 5.0
    """Normalised inputs are clipped to [-obs_clip, obs_clip]."""
    learning_rate: float = 1e-4
    """Adam learning rate of the predictor."""
    update_epochs: int = 4
    """Passes over the rollout per update()."""
    minibatch_size: int = 256
    """Transitions per gradient step (also the chunk size of reward())."""
    update_proportion: float = 0.25
    """Probability that a sample's loss is kept in a step (slows the predictor as in the paper)."""


VECTOR_HIDDEN = 64
"""Width of the hidden layers of the MLP target and predictor for vector observations."""


def _vector_networks(size: int, feature_dim: int) -> tuple[nn.Module, nn.Module]:
    """(target, predictor) MLPs ``[B, V] -> [B, D]``; the predictor has one more hidden layer (as the CNN one)."""
    target = nn.Sequential(
        nn.Linear(size, VECTOR_HIDDEN), nn.LeakyReLU(), nn.Linear(VECTOR_HIDDEN, VECTOR_HIDDEN), nn.LeakyReLU(),
        nn.Linear(VECTOR_HIDDEN, feature_dim),
    )
    predictor = nn.Sequential(
        nn.Linear(size, VECTOR_HIDDEN), nn.LeakyReLU(), nn.Linear(VECTOR_HIDDEN, VECTOR_HIDDEN), nn.LeakyReLU(),
        nn.Linear(VECTOR_HIDDEN, feature_dim), nn.ReLU(), nn.Linear(feature_dim, feature_dim),
    )
    return orthogonal_init(target), orthogonal_init(predictor)


def normalize_and_clip(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor, clip: float) -> torch.Tensor:
    """``((x - mean) / std).clamp(-clip, clip)``; ``mean``/``std`` broadcast against ``x [B, c, H, W]``."""
    return ((x - mean) / std).clamp(-clip, clip)


def prediction_novelty(target_features: torch.Tensor, predicted_features: torch.Tensor) -> torch.Tensor:
    """RND reward ``[B]``: half the squared error summed over the ``D`` features (as CleanRL)."""
    return (target_features - predicted_features).pow(2).sum(dim=1) / 2


class RNDNovelty:
    """Random Network Distillation: novelty = error of a trained predictor against a fixed random net."""

    name = "rnd"
    sequential = False

    def __init__(self, obs_spec: ObsSpec, config: RNDConfig, device: torch.device | str) -> None:
        self.vector = len(obs_spec.shape) == 1
        """Vector observations ``(V,)``: MLP networks instead of CNNs."""
        if not self.vector:
            check_obs_spec(obs_spec)
        for field in ("feature_dim", "obs_clip", "learning_rate", "update_epochs", "minibatch_size"):
            check_positive(getattr(config, field), f"rnd.{field}")
        if not 0.0 < config.update_proportion <= 1.0:
            raise ValueError(f"rnd.update_proportion must be in (0, 1], got {config.update_proportion}")
        self.obs_spec = obs_spec
        self.config = config
        self.device = torch.device(device)
        if self.vector:
            self.input_shape: tuple[int, ...] = tuple(obs_spec.shape)
            self.target, self.predictor = _vector_networks(self.input_shape[0], config.feature_dim)
        else:
            channels, height, width = obs_spec.shape
            self.input_shape = (channels if config.all_channels else 1, height, width)
            """(c, H, W) of the networks' input, or (V,) for vectors."""
            target_trunk = nature_conv(self.input_shape[0], nn.LeakyReLU)
            size = flat_size(target_trunk, self.input_shape, "RND")
            self.target = orthogonal_init(nn.Sequential(target_trunk, nn.Linear(size, config.feature_dim)))
            self.predictor = orthogonal_init(nn.Sequential(
                nature_conv(self.input_shape[0], nn.LeakyReLU),
                nn.Linear(size, config.feature_dim), nn.ReLU(),
                nn.Linear(config.feature_dim, config.feature_dim), nn.ReLU(),
                nn.Linear(config.feature_dim, config.feature_dim),
            ))
        self.target.to(self.device).requires_grad_(False)
        self.predictor.to(self.device)
        self.optimizer = torch.optim.Adam(self.predictor.parameters(), lr=config.learning_rate)
        self.obs_rms = RunningMeanStd(self.input_shape)
        """Per-pixel running statistics of the network inputs (float64, CPU)."""
        self._refresh_normalizer()

    def network_inputs(self, obs: torch.Tensor) -> torch.Tensor:
        """uint8 ``[B, C, H, W]`` -> unnormalised float32 inputs ``[B, c, H, W]`` on the module's device
        (float ``[B, V]`` vectors pass through as float32)."""
        obs = obs.to(self.device)
        if self.vector or self.config.all_channels:
            return obs.to(torch.float32)
        return to_grayscale(newest_frame(obs, self.obs_spec.channels_per_frame)).unsqueeze(1)

    def normalize(self, inputs: torch.Tensor) -> torch.Tensor:
        """``[B, c, H, W]`` (or ``[B, V]``) raw inputs -> normalised by the running statistics and clipped."""
        return normalize_and_clip(inputs, self._mean, self._std, self.config.obs_clip)

    def reward(
        self, obs: torch.Tensor, next_obs: torch.Tensor, actions: torch.Tensor, episode_ends: torch.Tensor
    ) -> torch.Tensor:
        """``[B]`` novelty of each ``next_obs``; initialises the normaliser from this batch if it is empty."""
        check_obs(next_obs, self.obs_spec, "next_obs")
        with torch.no_grad():
            inputs = self.network_inputs(next_obs)
            if self.obs_rms.count < 1.0:
                self._update_normalizer(inputs)
            return torch.cat([self._novelty(self.normalize(chunk))
                              for chunk in inputs.split(self.config.minibatch_size)])

    def update(self, batch: NoveltyBatch) -> dict[str, float]:
        """Update the input normaliser with ``batch.next_obs``, then train the predictor on it.

        Each minibatch keeps a random ``update_proportion`` of its samples (as in RND); only those
        are run through the predictor.
        """
        check_obs(batch.next_obs, self.obs_spec, "batch.next_obs")
        config = self.config
        inputs = self.network_inputs(batch.next_obs)
        self._update_normalizer(inputs)
        inputs = self.normalize(inputs)
        with torch.no_grad():  # the target is fixed: embed the rollout once
            targets = torch.cat([self.target(chunk) for chunk in inputs.split(config.minibatch_size)])
        losses = []
        for _ in range(config.update_epochs):
            for index in minibatches(inputs.shape[0], config.minibatch_size, self.device):
                kept = index[torch.rand(index.shape[0], device=self.device) < config.update_proportion]
                if kept.numel() == 0:
                    continue
                loss = (self.predictor(inputs[kept]) - targets[kept]).pow(2).mean()
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                losses.append(loss.detach())
        mean_loss = float(torch.stack(losses).mean()) if losses else float("nan")
        return {"novelty/rnd_loss": mean_loss}

    def state_dict(self) -> dict:
        return {
            "target": cpu_copy(self.target.state_dict()),
            "predictor": cpu_copy(self.predictor.state_dict()),
            "optimizer": optimizer_state(self.optimizer),
            "obs_rms": self.obs_rms.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.target.load_state_dict(state["target"])
        self.predictor.load_state_dict(state["predictor"])
        load_optimizer_state(self.optimizer, state["optimizer"])
        self.obs_rms.load_state_dict(state["obs_rms"])
        self._refresh_normalizer()

    def _novelty(self, normalized: torch.Tensor) -> torch.Tensor:
        return prediction_novelty(self.target(normalized), self.predictor(normalized))

    def _update_normalizer(self, inputs: torch.Tensor) -> None:
        inputs = inputs.to(torch.float64)
        self.obs_rms.update_from_moments(
            inputs.mean(dim=0).cpu(), inputs.var(dim=0, unbiased=False).cpu(), inputs.shape[0]
        )
        self._refresh_normalizer()

    def _refresh_normalizer(self) -> None:
        self._mean = self.obs_rms.mean.to(device=self.device, dtype=torch.float32)
        self._std = torch.sqrt(self.obs_rms.var + 1e-8).to(device=self.device, dtype=torch.float32)
