"""Intrinsic Curiosity Module (Pathak et al. 2017, "Curiosity-driven Exploration by Self-supervised
Prediction").

An encoder ``phi`` maps observations to features trained by an inverse model (which action led
from ``phi(s)`` to ``phi(s')``?), so the features keep what the agent can control. A forward model
predicts ``phi(s')`` from ``phi(s)`` and the action; its error is the novelty reward.

Choices, documented:
- the forward error is ``0.5 * mean over features of (forward - phi(s'))^2`` times
  ``forward_loss_scale = 288``: the paper's code summed over its 288 features at 42x42 inputs; a
  fixed factor keeps ``beta`` and ``eta`` meaning the same at any observation size;
- the forward loss trains only the forward model (``phi`` is detached there), as in Burda et al.
  2018 ("Large-Scale Study of Curiosity-Driven Learning"): the features are shaped by the inverse
  loss alone and cannot collapse to make the forward error trivially small.

Shapes: ``B`` batch, ``C, H, W`` one stacked observation, ``F`` feature size, ``A`` action features.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium
import torch
from torch import nn

from wanderlust.novelty.base import NoveltyBatch, ObsSpec
from wanderlust.novelty.nets import (
    action_features, action_size, check_actions, flat_size, icm_conv, inverse_dynamics_loss, orthogonal_init,
)
from wanderlust.novelty.support import (
    check_obs, check_obs_spec, check_positive, cpu_copy, load_optimizer_state, minibatches, optimizer_state,
)


@dataclass
class ICMConfig:
    """Hyperparameters of :class:`ICMNovelty` (defaults from the paper)."""

    beta: float = 0.2
    """Weight of the forward loss; the inverse loss gets 1 - beta."""
    eta: float = 0.01
    """Reward = eta * forward error."""
    forward_loss_scale: float = 288.0
    """Multiplies the per-feature mean forward error (the paper's feature count, see module docstring)."""
    hidden_size: int = 256
    """Width of the hidden layer of the forward and inverse models."""
    learning_rate: float = 1e-3
    """Adam learning rate of encoder, forward and inverse models."""
    update_epochs: int = 1
    """Passes over the rollout per update() (the paper took one gradient step per batch)."""
    minibatch_size: int = 256
    """Transitions per gradient step (also the chunk size of reward())."""


def forward_error(predicted: torch.Tensor, target: torch.Tensor, scale: float) -> torch.Tensor:
    """``[B]``: ``0.5 * scale * mean over F of (predicted - target)^2`` for ``[B, F]`` features."""
    return 0.5 * scale * (predicted - target).pow(2).mean(dim=1)


class ICMNovelty:
    """Curiosity as the forward model's error in a feature space learned by inverse dynamics."""

    name = "icm"
    sequential = False

    def __init__(
        self, obs_spec: ObsSpec, action_space: gymnasium.spaces.Space, config: ICMConfig, device: torch.device | str
    ) -> None:
        check_obs_spec(obs_spec)
        for field in ("forward_loss_scale", "hidden_size", "learning_rate", "update_epochs", "minibatch_size"):
            check_positive(getattr(config, field), f"icm.{field}")
        if not 0.0 <= config.beta <= 1.0 or config.eta < 0:
            raise ValueError(f"icm.beta must be in [0, 1] and icm.eta >= 0, got {config.beta}, {config.eta}")
        self.obs_spec = obs_spec
        self.action_space = action_space
        self.config = config
        self.device = torch.device(device)
        num_actions = action_size(action_space)
        self.encoder = icm_conv(obs_spec.shape[0])
        features = flat_size(self.encoder, obs_spec.shape, "ICM")
        self.feature_size = features
        """F: size of phi(s)."""
        hidden = config.hidden_size
        self.inverse_model = nn.Sequential(nn.Linear(2 * features, hidden), nn.ReLU(), nn.Linear(hidden, num_actions))
        self.forward_model = nn.Sequential(nn.Linear(features + num_actions, hidden), nn.ReLU(),
                                           nn.Linear(hidden, features))
        self.networks = nn.ModuleDict(
            {"encoder": self.encoder, "inverse_model": self.inverse_model, "forward_model": self.forward_model}
        )
        orthogonal_init(self.networks)
        for head in (self.inverse_model[-1], self.forward_model[-1]):
            orthogonal_init(head, gain=1.0)
        self.networks.to(self.device)
        self.optimizer = torch.optim.Adam(self.networks.parameters(), lr=config.learning_rate)

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """uint8 ``[B, C, H, W]`` -> ``phi [B, F]`` (inputs scaled to [0, 1])."""
        return self.encoder(obs.to(self.device).to(torch.float32) / 255.0)

    def reward(
        self, obs: torch.Tensor, next_obs: torch.Tensor, actions: torch.Tensor, episode_ends: torch.Tensor
    ) -> torch.Tensor:
        """``[B]`` novelty ``eta * forward_error`` of each transition."""
        self._check(obs, next_obs, actions)
        size = self.config.minibatch_size
        with torch.no_grad():
            return torch.cat([
                self.config.eta * self.losses(o, n, a)[1]
                for o, n, a in zip(obs.split(size), next_obs.split(size), actions.split(size))
            ])

    def update(self, batch: NoveltyBatch) -> dict[str, float]:
        """Train encoder, inverse and forward models on the rollout for ``update_epochs``."""
        self._check(batch.obs, batch.next_obs, batch.actions)
        config = self.config
        obs, next_obs, actions = (x.to(self.device) for x in (batch.obs, batch.next_obs, batch.actions))
        forward_losses, inverse_losses = [], []
        for _ in range(config.update_epochs):
            for index in minibatches(obs.shape[0], config.minibatch_size, self.device):
                per_sample_inverse, per_sample_forward = self.losses(obs[index], next_obs[index], actions[index])
                inverse_loss, forward_loss = per_sample_inverse.mean(), per_sample_forward.mean()
                loss = (1.0 - config.beta) * inverse_loss + config.beta * forward_loss
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                forward_losses.append(forward_loss.detach())
                inverse_losses.append(inverse_loss.detach())
        return {
            "novelty/icm_forward_loss": float(torch.stack(forward_losses).mean()),
            "novelty/icm_inverse_loss": float(torch.stack(inverse_losses).mean()),
        }

    def state_dict(self) -> dict:
        return {"networks": cpu_copy(self.networks.state_dict()), "optimizer": optimizer_state(self.optimizer)}

    def load_state_dict(self, state: dict) -> None:
        self.networks.load_state_dict(state["networks"])
        load_optimizer_state(self.optimizer, state["optimizer"])

    def losses(
        self, obs: torch.Tensor, next_obs: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-sample (inverse loss ``[B]``, forward error ``[B]``) of a minibatch."""
        batch = obs.shape[0]
        phi, phi_next = self.encode(torch.cat([obs, next_obs])).split(batch)
        actions = actions.to(self.device)
        inverse = inverse_dynamics_loss(
            self.inverse_model(torch.cat([phi, phi_next], dim=1)), actions, self.action_space
        )
        predicted = self.forward_model(
            torch.cat([phi.detach(), action_features(actions, self.action_space)], dim=1)
        )
        return inverse, forward_error(predicted, phi_next.detach(), self.config.forward_loss_scale)

    def _check(self, obs: torch.Tensor, next_obs: torch.Tensor, actions: torch.Tensor) -> None:
        check_obs(obs, self.obs_spec, "obs")
        check_obs(next_obs, self.obs_spec, "next_obs", obs.shape[0])
        check_actions(actions, self.action_space, obs.shape[0])
