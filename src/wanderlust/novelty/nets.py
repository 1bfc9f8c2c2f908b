"""Network pieces shared by the learned novelty modules (RND, ICM, episodic).

Shapes: ``B`` batch, ``C, H, W`` one network input, ``F`` flattened feature size, ``A`` action
features (``n`` one-hot entries for Discrete, the action's length for Box).
"""

from __future__ import annotations

import math

import gymnasium
import torch
import torch.nn.functional as F
from torch import nn


def orthogonal_init(module: nn.Module, gain: float = math.sqrt(2)) -> nn.Module:
    """Orthogonal weights scaled by ``gain`` and zero biases for every conv/linear layer in ``module``."""
    for layer in module.modules():
        if isinstance(layer, (nn.Conv2d, nn.Linear)):
            nn.init.orthogonal_(layer.weight, gain)
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)
    return module


def nature_conv(in_channels: int, activation: type[nn.Module]) -> nn.Sequential:
    """Conv 32 8x8/4, 64 4x4/2, 64 3x3/1 + flatten (Mnih et al. 2015; RND's trunk): ``[B, C, H, W] -> [B, F]``.

    Needs frames of at least 36x36.
    """
    return nn.Sequential(
        nn.Conv2d(in_channels, 32, 8, stride=4), activation(),
        nn.Conv2d(32, 64, 4, stride=2), activation(),
        nn.Conv2d(64, 64, 3, stride=1), activation(),
        nn.Flatten(),
    )


def icm_conv(in_channels: int) -> nn.Sequential:
    """ICM's encoder (Pathak et al. 2017): four conv 32 3x3 stride 2 ("same" padding), ELU, flatten."""
    layers: list[nn.Module] = []
    for index in range(4):
        layers += [nn.Conv2d(in_channels if index == 0 else 32, 32, 3, stride=2, padding=1), nn.ELU()]
    return nn.Sequential(*layers, nn.Flatten())


def flat_size(trunk: nn.Module, input_shape: tuple[int, int, int], what: str) -> int:
    """Feature size ``F`` of ``trunk`` for one ``(C, H, W)`` input, found by a dummy forward pass."""
    parameter = next(trunk.parameters())
    dummy = torch.zeros((1, *input_shape), dtype=parameter.dtype, device=parameter.device)
    with torch.no_grad():
        try:
            features = trunk(dummy)
        except RuntimeError as error:
            raise ValueError(
                f"observations of shape {input_shape} are too small for the {what} encoder; "
                "use frames of at least 36x36"
            ) from error
    return int(features.shape[1])


def action_size(action_space: gymnasium.spaces.Space) -> int:
    """``A``: ``n`` for Discrete, the length for a 1-D Box; ValueError for anything else."""
    if isinstance(action_space, gymnasium.spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, gymnasium.spaces.Box) and len(action_space.shape) == 1:
        return int(action_space.shape[0])
    raise ValueError(
        f"novelty models support Discrete and 1-D Box action spaces, got {action_space}; "
        "flatten the action space with a Gymnasium wrapper"
    )


def check_actions(actions: torch.Tensor, action_space: gymnasium.spaces.Space, batch_size: int) -> None:
    """Raise ValueError unless ``actions`` is ``[B]`` int (Discrete) or ``[B, A]`` float (Box)."""
    if isinstance(action_space, gymnasium.spaces.Discrete):
        if actions.shape != (batch_size,) or actions.is_floating_point():
            raise ValueError(f"Discrete actions must be an int64 tensor [{batch_size}], got {actions.dtype} "
                             f"{tuple(actions.shape)}")
    elif actions.shape != (batch_size, action_size(action_space)) or not actions.is_floating_point():
        raise ValueError(f"Box actions must be a float tensor [{batch_size}, {action_size(action_space)}], "
                         f"got {actions.dtype} {tuple(actions.shape)}")


def action_features(actions: torch.Tensor, action_space: gymnasium.spaces.Space) -> torch.Tensor:
    """Actions -> float32 ``[B, A]``: one-hot for Discrete ``[B]``, unchanged for Box ``[B, A]``."""
    if isinstance(action_space, gymnasium.spaces.Discrete):
        return F.one_hot(actions.long(), int(action_space.n)).to(torch.float32)
    return actions.to(torch.float32)


def inverse_dynamics_loss(
    output: torch.Tensor, actions: torch.Tensor, action_space: gymnasium.spaces.Space
) -> torch.Tensor:
    """Per-sample loss ``[B]`` of an inverse model's raw ``output [B, A]`` against the taken actions.

    Discrete: cross-entropy of the logits. Box: mean squared error of ``tanh(output)`` against the
    action in [-1, 1] (the squashed action the env received).
    """
    if isinstance(action_space, gymnasium.spaces.Discrete):
        return F.cross_entropy(output, actions.long(), reduction="none")
    return (torch.tanh(output) - actions.to(output.dtype).clamp(-1.0, 1.0)).pow(2).mean(dim=1)
