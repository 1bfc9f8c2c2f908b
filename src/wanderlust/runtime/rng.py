"""Seeding and the global random number generators' state, for exact resume.

Covers Python's ``random``, numpy's global (legacy) ``np.random`` and torch's CPU generator, plus
torch's CUDA generators when CUDA is available. Components that own a ``np.random.Generator`` keep
its ``bit_generator.state`` in their own ``state_dict()``. The captured state contains only
tuples, ints, floats, None, strings, numpy arrays and tensors, so it goes through
:func:`wanderlust.runtime.checkpoint.save_checkpoint` unchanged.
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import torch


def seed_everything(seed: int, *, deterministic: bool = False) -> None:
    """Seed ``random``, ``np.random`` and torch (CPU and CUDA) with ``seed``.

    ``deterministic=True`` also makes cuDNN pick deterministic kernels (slower; as CleanRL's
    ``torch_deterministic``).
    """
    if type(seed) is not int or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an int in [0, 2**32), got {seed!r}; pass e.g. --seed 1")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    if deterministic:
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False


def capture_rng_state() -> dict:
    """The state of every global generator: ``{"python", "numpy", "torch", "torch_cuda"}``."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(legacy=False),
        "torch": torch.get_rng_state(),
        "torch_cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def restore_rng_state(state: dict) -> None:
    """Put back a state from :func:`capture_rng_state` (also after a checkpoint round trip).

    CUDA generator states are restored when this machine has the same number of CUDA devices;
    otherwise they are skipped with a warning (the run continues, but not bit-exactly).
    """
    missing = {"python", "numpy", "torch"} - set(state)
    if missing:
        raise ValueError(f"RNG state lacks {sorted(missing)}; pass the dict made by capture_rng_state()")
    random.setstate(_as_tuples(state["python"]))
    np.random.set_state(state["numpy"])
    torch.set_rng_state(torch.as_tensor(state["torch"], dtype=torch.uint8).cpu())
    cuda_states = list(state.get("torch_cuda", []))
    if not cuda_states:
        return
    if torch.cuda.is_available() and torch.cuda.device_count() == len(cuda_states):
        torch.cuda.set_rng_state_all([torch.as_tensor(s, dtype=torch.uint8).cpu() for s in cuda_states])
    else:
        warnings.warn(
            f"checkpoint holds RNG state for {len(cuda_states)} CUDA device(s) but this machine has "
            f"{torch.cuda.device_count() if torch.cuda.is_available() else 0}; CUDA randomness will differ",
            stacklevel=2,
        )


def _as_tuples(value: object) -> object:
    """``random.setstate`` insists on tuples; accept lists too (e.g. state read from plain JSON)."""
    if isinstance(value, (list, tuple)):
        return tuple(_as_tuples(item) for item in value)
    return value
