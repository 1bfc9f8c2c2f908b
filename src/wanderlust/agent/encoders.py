"""Encoders: ``[B, C, H, W]`` frames (or ``[B, D]`` vectors) -> ``[B, output_dim]`` features.

Three pixel presets, chosen by name with :func:`make_encoder`:

- ``nature``: the Nature-DQN CNN (Mnih et al. 2015): conv 32 8x8/4, conv 64 4x4/2, conv 64 3x3/1,
  ReLU after each, then linear 512 + ReLU. Needs frames of at least 36x36.
- ``impala``: the IMPALA CNN (Espeholt et al. 2018): three stacks of conv 3x3 + max-pool 3x3/2 +
  two residual blocks (16, 32, 32 channels), then ReLU, linear 256 + ReLU. Any frame size.
- ``seed``: the small CNN of the original user's agent: conv 16 3x3 "same" + max-pool 2, conv 32 +
  max-pool 2, conv 64 + max-pool 2 (ReLU after each conv), flatten, dense 128 + ReLU.
  Needs frames of at least 8x8.

Every pixel encoder takes uint8 or float observations with values in [0, 255] and divides by 255
itself, so callers pass the frames exactly as the env produced them. With ``center=True`` it also
subtracts 0.5, so the first layer sees values in [-0.5, 0.5]: a first-layer filter then gets inputs
of both signs, and a drift of its weights cannot switch its ReLU off on every frame at once.

- ``mlp``: for vector observations ``[B, D]`` (CartPole, Pendulum, ...): linear 64 + tanh, linear
  64 + tanh, as CleanRL's ``ppo.py``. The values are used as the env gives them (no scaling).

Weights use the CleanRL-style orthogonal initialisation (gain sqrt(2), zero bias).
"""

from __future__ import annotations

import math

import torch
from torch import nn

ENCODER_NAMES: tuple[str, ...] = ("nature", "impala", "seed")
"""The pixel encoder presets (for ``[C, H, W]`` frames)."""
MLP_ENCODER = "mlp"
"""The encoder for 1-D observations ``(D,)``; the actor-critic picks it by itself for vectors."""
ALL_ENCODER_NAMES: tuple[str, ...] = (*ENCODER_NAMES, MLP_ENCODER)

_MIN_SIZE = {"nature": 36, "impala": 1, "seed": 8}
"""Smallest height/width (pixels) each preset can reduce to a non-empty feature map."""


def layer_init(layer: nn.Module, gain: float = math.sqrt(2.0), bias: float = 0.0) -> nn.Module:
    """Orthogonal weights with ``gain`` and a constant bias (CleanRL's ``layer_init``); returns ``layer``."""
    nn.init.orthogonal_(layer.weight, gain)
    if layer.bias is not None:
        nn.init.constant_(layer.bias, bias)
    return layer


def _init_all(module: nn.Module) -> None:
    """Apply :func:`layer_init` with gain sqrt(2) to every conv and linear layer inside ``module``."""
    for sub in module.modules():
        if isinstance(sub, (nn.Conv2d, nn.Linear)):
            layer_init(sub)


def scale_obs(obs: torch.Tensor) -> torch.Tensor:
    """uint8 or float ``[B, C, H, W]`` in [0, 255] -> float32 in [0, 1]."""
    if obs.dtype == torch.uint8:
        return obs.to(torch.float32).div_(255.0)  # a fresh tensor: dividing in place is safe
    return obs.to(torch.float32) / 255.0


class PixelEncoder(nn.Module):
    """A conv trunk followed by a flatten and one dense ReLU layer.

    ``output_dim`` is the feature size; ``obs_shape`` is the ``(C, H, W)`` it was built for.
    """

    def __init__(
        self, name: str, obs_shape: tuple[int, int, int], trunk: nn.Module, hidden: int, center: bool = False
    ) -> None:
        super().__init__()
        self.name = name
        self.obs_shape = obs_shape
        self.center = bool(center)
        self.trunk = trunk
        with torch.no_grad():
            flat_dim = int(trunk(torch.zeros(1, *obs_shape)).flatten(1).shape[1])
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(flat_dim, hidden), nn.ReLU())
        self.output_dim: int = hidden
        _init_all(self)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """``[B, C, H, W]`` uint8/float in [0, 255] -> ``[B, output_dim]`` float32."""
        if obs.dim() != 4 or tuple(obs.shape[1:]) != self.obs_shape:
            raise ValueError(
                f"{self.name} encoder expects observations [B, {', '.join(map(str, self.obs_shape))}], "
                f"got {list(obs.shape)}; pass a batch of frames shaped like the env's observation space"
            )
        x = scale_obs(obs)
        return self.head(self.trunk(x - 0.5 if self.center else x))


class MLPEncoder(nn.Module):
    """Vector observations ``[B, D]`` -> ``[B, 64]``: two tanh layers of 64 (CleanRL's ``ppo.py``)."""

    def __init__(self, obs_shape: tuple[int], hidden: int = 64) -> None:
        super().__init__()
        self.name = MLP_ENCODER
        self.obs_shape = obs_shape
        self.body = nn.Sequential(nn.Linear(obs_shape[0], hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.output_dim: int = hidden
        _init_all(self)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """``[B, D]`` (any numeric dtype) -> ``[B, output_dim]`` float32."""
        if obs.dim() != 2 or tuple(obs.shape[1:]) != self.obs_shape:
            raise ValueError(
                f"mlp encoder expects observations [B, {self.obs_shape[0]}], got {list(obs.shape)}; "
                "pass a batch of vectors shaped like the env's observation space"
            )
        return self.body(obs.to(torch.float32))


def _nature_trunk(channels: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(channels, 32, 8, stride=4), nn.ReLU(),
        nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
        nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(),
    )


class ResidualBlock(nn.Module):
    """``x + conv(relu(conv(relu(x))))`` with 3x3 "same" convs (IMPALA)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv1(torch.relu(self.conv0(torch.relu(x))))


def _impala_stack(in_channels: int, out_channels: int) -> nn.Module:
    """conv 3x3 -> max-pool 3x3 stride 2 (halves H and W, rounding up) -> 2 residual blocks."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 3, padding=1),
        nn.MaxPool2d(3, stride=2, padding=1),
        ResidualBlock(out_channels),
        ResidualBlock(out_channels),
    )


def _impala_trunk(channels: int) -> nn.Module:
    # The ReLU after the last stack is the "ReLU before the linear layer" of the IMPALA paper.
    return nn.Sequential(
        _impala_stack(channels, 16), _impala_stack(16, 32), _impala_stack(32, 32), nn.ReLU(),
    )


def _seed_trunk(channels: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(channels, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    )


def make_encoder(name: str, obs_shape: tuple[int, ...], center: bool = False) -> PixelEncoder | MLPEncoder:
    """Build the encoder ``name`` (one of :data:`ALL_ENCODER_NAMES`): a pixel preset for frames
    ``(C, H, W)`` or ``mlp`` for vectors ``(D,)``. ``center``: pixel encoders feed the first layer
    ``x / 255 - 0.5`` instead of ``x / 255`` (ignored by ``mlp``).

    >>> enc = make_encoder("nature", (4, 84, 84))
    >>> enc(torch.zeros(2, 4, 84, 84, dtype=torch.uint8)).shape
    torch.Size([2, 512])
    >>> make_encoder("mlp", (4,))(torch.zeros(2, 4)).shape
    torch.Size([2, 64])
    """
    if name not in ALL_ENCODER_NAMES:
        raise ValueError(f"unknown encoder {name!r}; choose one of {', '.join(ALL_ENCODER_NAMES)}")
    if name == MLP_ENCODER:
        if len(obs_shape) != 1 or int(obs_shape[0]) <= 0:
            raise ValueError(
                f"the mlp encoder needs vector observations (D,), got {tuple(obs_shape)}; "
                f"use one of {', '.join(ENCODER_NAMES)} for images"
            )
        return MLPEncoder((int(obs_shape[0]),))
    if len(obs_shape) != 3 or any(int(d) <= 0 for d in obs_shape):
        raise ValueError(
            f"the {name} encoder needs an observation shape (C, H, W) of positive sizes, got {tuple(obs_shape)}; "
            "use channel-first image observations (or the 'mlp' encoder for vectors)"
        )
    obs_shape = (int(obs_shape[0]), int(obs_shape[1]), int(obs_shape[2]))
    channels, height, width = obs_shape
    min_size = _MIN_SIZE[name]
    if height < min_size or width < min_size:
        raise ValueError(
            f"the {name} encoder needs frames of at least {min_size}x{min_size} pixels, got {height}x{width}; "
            "resize the observations larger or use the 'impala' encoder"
        )
    if name == "nature":
        return PixelEncoder(name, obs_shape, _nature_trunk(channels), hidden=512, center=center)
    if name == "impala":
        return PixelEncoder(name, obs_shape, _impala_trunk(channels), hidden=256, center=center)
    return PixelEncoder(name, obs_shape, _seed_trunk(channels), hidden=128, center=center)
