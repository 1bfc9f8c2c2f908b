"""The actor-critic: one encoder, a policy head and two value heads.

``obs [B, C, H, W] (or [B, D]) -> encoder -> features [B, F] -> {actor head, value_ext, value_int}``

Image observations use the pixel encoder preset named in the config; vector observations ``(D,)``
always use the ``mlp`` encoder (pixel presets cannot read them).

- Box actions in [-1, 1] with shape ``(A,)``: the actor outputs the mean of a
  :class:`~wanderlust.agent.distributions.SquashedGaussian`; its ``log_std`` is a learnable,
  state-independent parameter ``[A]`` initialised to ``log_std_init`` (default 0: std 1, so
  ``tanh(u)`` covers most of [-1, 1] at the start, as the seed's gamepad did), clamped to
  ``[LOG_STD_MIN, LOG_STD_MAX]``.
  With ``action_bins = K >= 2`` the actor instead outputs ``A x K`` logits of a
  :class:`~wanderlust.agent.distributions.BinnedActions` (``K`` evenly spaced values per axis).
- Discrete(n): the actor outputs ``n`` logits of a categorical.
- ``value_ext`` estimates the extrinsic (game) return and ``value_int`` the intrinsic (novelty)
  return; the two streams have different discounts and episode handling (RND, Burda et al. 2018).

Initialisation follows CleanRL: orthogonal, gain sqrt(2) in the encoder, 0.01 for the actor
output (near-uniform initial policy), 1.0 for the critics; zero biases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from wanderlust.agent.distributions import ActionDistribution, BinnedActions, CategoricalActions, SquashedGaussian
from wanderlust.agent.encoders import MLP_ENCODER, layer_init, make_encoder

if TYPE_CHECKING:
    from wanderlust.runtime.config import TrainConfig

LOG_STD_MIN = -5.0
"""Smallest log-std of the Gaussian policy (std ~ 0.007): keeps log-probs bounded."""
LOG_STD_MAX = 2.0
"""Largest log-std (std ~ 7.4): beyond it tanh saturates and more noise changes nothing."""


def check_log_std_init(value: float) -> None:
    """ValueError unless ``value`` is a number in ``[LOG_STD_MIN, LOG_STD_MAX]``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not LOG_STD_MIN <= value <= LOG_STD_MAX:
        raise ValueError(f"log_std_init must be a number in [{LOG_STD_MIN:g}, {LOG_STD_MAX:g}], got {value!r}")


SUPPORTED_SPACES = "Box(-1, 1, shape=(A,)) or Discrete(n) with start 0"


class ActOutput(NamedTuple):
    """What acting returns for a batch of ``B`` observations (no gradient)."""

    action: torch.Tensor
    """Storage form: raw pre-tanh ``u`` float32 ``[B, A]`` (Box), bin indices as float32 ``[B, A]``
    (binned Box) or int64 indices ``[B]`` (Discrete)."""
    env_action: torch.Tensor
    """What the env receives: float32 ``[B, A]`` in [-1, 1] (``tanh(u)`` or the bins' values), or the indices ``[B]``."""
    log_prob: torch.Tensor
    """``log pi(action | obs)`` ``[B]``."""
    value_ext: torch.Tensor
    """Extrinsic value ``[B]``."""
    value_int: torch.Tensor
    """Intrinsic value ``[B]``."""


class Evaluation(NamedTuple):
    """What PPO needs for stored actions (with gradient)."""

    log_prob: torch.Tensor
    """``log pi(action | obs)`` ``[B]``."""
    entropy: torch.Tensor
    """Policy entropy ``[B]`` (base-Gaussian entropy for a Gaussian Box policy, see ``SquashedGaussian.entropy``)."""
    value_ext: torch.Tensor
    """Extrinsic value ``[B]``."""
    value_int: torch.Tensor
    """Intrinsic value ``[B]``."""


def check_action_space(action_space: spaces.Space) -> None:
    """Raise ValueError unless ``action_space`` is one the actor-critic supports."""
    if isinstance(action_space, spaces.Discrete):
        if int(action_space.start) != 0:
            raise ValueError(
                f"unsupported action space {action_space}: Discrete must start at 0; supported: {SUPPORTED_SPACES}"
            )
        return
    if isinstance(action_space, spaces.Box):
        if len(action_space.shape) != 1:
            raise ValueError(
                f"unsupported action space {action_space}: Box must be one-dimensional; supported: {SUPPORTED_SPACES}"
            )
        if not (np.all(action_space.low == -1.0) and np.all(action_space.high == 1.0)):
            raise ValueError(
                f"unsupported action space {action_space}: Box bounds must be exactly [-1, 1] "
                f"(rescale it with gymnasium.wrappers.RescaleAction); supported: {SUPPORTED_SPACES}"
            )
        return
    raise ValueError(f"unsupported action space {action_space}; supported: {SUPPORTED_SPACES}")


def check_action_bins(action_bins: int) -> None:
    """Raise ValueError unless ``action_bins`` is 0 (Gaussian) or an integer >= 2."""
    if isinstance(action_bins, bool) or not isinstance(action_bins, int) or action_bins == 1 or action_bins < 0:
        raise ValueError(f"action_bins must be 0 (squashed Gaussian) or an integer >= 2, got {action_bins!r}")


class ActorCritic(nn.Module):
    """Policy and two critics over pixel observations ``(C, H, W)`` or vector observations ``(D,)``.

    ``encoder`` is a preset name from :data:`wanderlust.agent.encoders.ENCODER_NAMES` for images;
    1-D observations use the ``mlp`` encoder whatever ``encoder`` says. ``action_bins``: for Box
    actions, 0 is the squashed Gaussian and ``K >= 2`` the binned categorical; ignored for Discrete.
    ``center_pixels``: the pixel encoder feeds its first layer ``x / 255 - 0.5`` (see encoders).
    ``log_std_init``: the Gaussian's initial log-std (Box actions without bins; SB3's name).
    Inputs are uint8 (or float in [0, 255]) frames, or float vectors, on the module's device.
    """

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        action_space: spaces.Space,
        encoder: str = "nature",
        action_bins: int = 0,
        center_pixels: bool = False,
        log_std_init: float = 0.0,
    ) -> None:
        super().__init__()
        check_action_space(action_space)
        check_action_bins(action_bins)
        check_log_std_init(log_std_init)
        self.obs_shape = tuple(int(d) for d in obs_shape)
        self.action_space = action_space
        self.is_discrete = isinstance(action_space, spaces.Discrete)
        self.encoder = make_encoder(
            MLP_ENCODER if len(self.obs_shape) == 1 else encoder, self.obs_shape, center=center_pixels
        )
        features = self.encoder.output_dim
        if self.is_discrete:
            self.action_dim = int(action_space.n)
            self.action_bins = 0
            self.actor = layer_init(nn.Linear(features, self.action_dim), gain=0.01)
            self.register_parameter("log_std", None)
        else:
            self.action_dim = int(action_space.shape[0])
            self.action_bins = action_bins
            outputs = self.action_dim * action_bins if action_bins else self.action_dim
            self.actor = layer_init(nn.Linear(features, outputs), gain=0.01)
            if action_bins:
                self.register_parameter("log_std", None)
            else:
                self.log_std = nn.Parameter(torch.full((self.action_dim,), float(log_std_init)))
        self.value_ext = layer_init(nn.Linear(features, 1), gain=1.0)
        self.value_int = layer_init(nn.Linear(features, 1), gain=1.0)

    def distribution(self, features: torch.Tensor) -> ActionDistribution:
        """The policy at encoder ``features`` ``[B, F]``."""
        head = self.actor(features)
        if self.is_discrete:
            return CategoricalActions(head)
        if self.action_bins:  # [B, A * K] -> [B, A, K]
            return BinnedActions(head.view(head.shape[0], self.action_dim, self.action_bins))
        log_std = self.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        return SquashedGaussian(head, log_std)

    def _heads(self, obs: torch.Tensor) -> tuple[ActionDistribution, torch.Tensor, torch.Tensor]:
        features = self.encoder(obs)
        return (
            self.distribution(features),
            self.value_ext(features).squeeze(-1),
            self.value_int(features).squeeze(-1),
        )

    @torch.no_grad()
    def act(self, obs: torch.Tensor, deterministic: bool = False, noise: torch.Tensor | None = None) -> ActOutput:
        """Choose actions for ``obs`` ``[B, C, H, W]``: sampled, or greedy when ``deterministic``.

        ``noise``: the standard-normal draws ``[B, A]`` of a squashed Gaussian's sample (held
        exploration noise, :mod:`wanderlust.agent.noise`); None draws fresh noise.
        """
        dist, value_ext, value_int = self._heads(obs)
        if noise is not None and not isinstance(dist, SquashedGaussian):
            raise ValueError("explicit exploration noise needs a squashed Gaussian policy")
        if deterministic:
            action = dist.deterministic()
        else:
            action = dist.sample() if noise is None else dist.sample(noise)
        return ActOutput(
            action=action,
            env_action=dist.env_action(action),
            log_prob=dist.log_prob(action),
            value_ext=value_ext,
            value_int=value_int,
        )

    def evaluate(self, obs: torch.Tensor, action: torch.Tensor) -> Evaluation:
        """Log-prob, entropy and values of stored ``action`` (storage form) at ``obs``, with gradient."""
        dist, value_ext, value_int = self._heads(obs)
        return Evaluation(
            log_prob=dist.log_prob(action),
            entropy=dist.entropy(),
            value_ext=value_ext,
            value_int=value_int,
        )

    @torch.no_grad()
    def values(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(value_ext [B], value_int [B])`` at ``obs`` (for bootstrapping), no gradient."""
        features = self.encoder(obs)
        return self.value_ext(features).squeeze(-1), self.value_int(features).squeeze(-1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """The greedy env action for ``obs`` (``tanh(mean)`` ``[B, A]`` or argmax ``[B]``); for export."""
        dist = self.distribution(self.encoder(obs))
        return dist.env_action(dist.deterministic())


def build_agent(config: TrainConfig, obs_shape: tuple[int, ...], action_space: spaces.Space) -> ActorCritic:
    """The actor-critic that ``config`` describes (encoder, action bins, centring) for these spaces, on the CPU."""
    return ActorCritic(
        obs_shape, action_space, encoder=config.encoder, action_bins=config.action_bins,
        center_pixels=config.center_pixels, log_std_init=config.log_std_init,
    )
