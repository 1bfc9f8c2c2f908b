"""Small helpers shared by the novelty modules: input checks, minibatches, checkpoint-safe state.

State returned by ``state_dict()`` must survive a checkpoint that keeps tensors in safetensors and
everything else in JSON, so tensors are copied to the CPU and optimizer state (whose ``state`` is
keyed by int parameter ids, which JSON would turn into strings) gets string keys here and int keys
back on load.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from wanderlust.novelty.base import ObsSpec


def check_obs_spec(obs_spec: ObsSpec) -> None:
    """Raise ValueError unless ``obs_spec`` describes ``[C, H, W]`` frames of 1 or 3 channels each."""
    if len(obs_spec.shape) != 3:
        raise ValueError(f"ObsSpec.shape must be (C, H, W), got {obs_spec.shape}")
    channels = obs_spec.shape[0]
    if obs_spec.channels_per_frame not in (1, 3) or channels % obs_spec.channels_per_frame != 0:
        raise ValueError(
            f"ObsSpec.channels_per_frame must be 1 (gray) or 3 (RGB) and divide C={channels}, "
            f"got {obs_spec.channels_per_frame}"
        )


def check_obs(obs: torch.Tensor, obs_spec: ObsSpec, name: str, batch_size: int | None = None) -> None:
    """Raise ValueError unless ``obs`` is uint8 ``[B, C, H, W]`` (float ``[B, D]`` for a vector
    ``obs_spec``) matching ``obs_spec`` (and ``B``)."""
    vector = len(obs_spec.shape) == 1
    if not isinstance(obs, torch.Tensor) or obs.dim() != len(obs_spec.shape) + 1 or (
        not obs.is_floating_point() if vector else obs.dtype != torch.uint8
    ):
        got = f"{obs.dtype} {tuple(obs.shape)}" if isinstance(obs, torch.Tensor) else type(obs).__name__
        expected = "float tensor [B, D]" if vector else "uint8 tensor [B, C, H, W]"
        raise ValueError(f"{name} must be a {expected}, got {got}")
    if tuple(obs.shape[1:]) != tuple(obs_spec.shape):
        raise ValueError(f"{name} has shape {tuple(obs.shape)}; the module was built for [B, {obs_spec.shape}]")
    if batch_size is not None and obs.shape[0] != batch_size:
        raise ValueError(
            f"{name} has batch size {obs.shape[0]}; a sequential novelty module is called once per env "
            f"step with B == num_envs == {batch_size}"
        )


def episode_ends_mask(episode_ends: torch.Tensor, num_envs: int, device: torch.device) -> torch.Tensor:
    """``episode_ends`` (any bool-like ``[N]``) -> bool tensor ``[N]`` on ``device``; ValueError on bad shape."""
    ends = torch.as_tensor(episode_ends, device=device).to(torch.bool)
    if ends.shape != (num_envs,):
        raise ValueError(f"episode_ends must have shape [{num_envs}] (one flag per env), got {tuple(ends.shape)}")
    return ends


def check_step(
    obs: torch.Tensor, next_obs: torch.Tensor, episode_ends: torch.Tensor, obs_spec: ObsSpec, num_envs: int,
    device: torch.device,
) -> torch.Tensor:
    """Check one env step given to a sequential module's ``reward()`` (``obs``, ``next_obs`` ``[N, C, H, W]``,
    ``episode_ends [N]``); return the episode ends as a bool tensor ``[N]`` on ``device``."""
    check_obs(obs, obs_spec, "obs", num_envs)
    check_obs(next_obs, obs_spec, "next_obs", num_envs)
    return episode_ends_mask(episode_ends, num_envs, device)


def check_positive(value: float, name: str) -> None:
    """Raise ValueError unless ``value > 0``."""
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value}")


def minibatches(batch_size: int, minibatch_size: int, device: torch.device) -> Iterator[torch.Tensor]:
    """Shuffled index tensors covering ``range(batch_size)`` in chunks of ``minibatch_size``."""
    order = torch.randperm(batch_size, device=device)
    yield from order.split(minibatch_size)


def cpu_copy(tree: Any) -> Any:
    """Deep copy of a nest of dicts/lists/tuples with every tensor detached and cloned to the CPU."""
    if isinstance(tree, torch.Tensor):
        return tree.detach().to("cpu", copy=True)
    if isinstance(tree, dict):
        return {key: cpu_copy(value) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [cpu_copy(value) for value in tree]
    return tree


def optimizer_state(optimizer: torch.optim.Optimizer) -> dict:
    """``optimizer.state_dict()`` with string keys in ``state`` and tensors on the CPU (JSON-safe)."""
    state = optimizer.state_dict()
    return cpu_copy({"state": {str(k): v for k, v in state["state"].items()}, "param_groups": state["param_groups"]})


def load_optimizer_state(optimizer: torch.optim.Optimizer, state: dict) -> None:
    """Inverse of :func:`optimizer_state` (tensors are moved to the parameters' device by torch)."""
    groups = [dict(group) for group in state["param_groups"]]
    for group in groups:
        group["params"] = [int(p) for p in group["params"]]
        if "betas" in group:
            group["betas"] = tuple(group["betas"])
    optimizer.load_state_dict({"state": {int(k): v for k, v in state["state"].items()}, "param_groups": groups})


def load_tensor(value: Any, like: torch.Tensor) -> torch.Tensor:
    """A saved tensor as a copy with ``like``'s dtype and device; ValueError if the shape differs."""
    tensor = torch.as_tensor(value)
    if tensor.shape != like.shape:
        raise ValueError(
            f"saved novelty state has shape {tuple(tensor.shape)}, expected {tuple(like.shape)}; "
            "resume with the same observation shape, num_envs and novelty config"
        )
    return tensor.to(device=like.device, dtype=like.dtype, copy=True)
