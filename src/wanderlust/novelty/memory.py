"""Per-env episodic ring buffer shared by the sequential novelty modules (pixel, episodic).

Contract of :class:`PerEnvMemory` (``N`` envs, ``K`` capacity, ``E`` entry shape, e.g. ``(H, W)`` for
grayscale frames or ``(D,)`` for embeddings):

- ``entries [N, K, *E]`` holds each env's entries of the current episode; ``counts [N]`` (int64) says
  how many were written since the episode began (0 = empty). Env ``i`` writes its next entry to slot
  ``counts[i] % K``, so once ``counts[i] > K`` the oldest entry is overwritten first.
- Slots ``>= min(counts[i], K)`` are unfilled: their contents are stale and :meth:`PerEnvMemory.mask`
  is False there.
- A module's ``reward()`` step is: :meth:`~PerEnvMemory.fill_empty` (an env starting an episode gets its
  start frame as the first entry), score the new entry against ``entries`` and ``mask()``,
  :meth:`~PerEnvMemory.push` the new entry (it joins only *after* it was scored), then
  :meth:`~PerEnvMemory.clear` the envs whose episode ended (their next step starts from the reset frame).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from wanderlust.novelty.support import cpu_copy, load_tensor


def history_mask(counts: torch.Tensor, capacity: int) -> torch.Tensor:
    """``counts [N]`` (entries ever written this episode) -> bool ``[N, capacity]``, True where filled."""
    slots = torch.arange(capacity, device=counts.device)
    return slots[None, :] < counts.clamp(max=capacity)[:, None]


class PerEnvMemory:
    """Ring buffer ``[N, K, *E]`` of each env's entries this episode, with per-env counts ``[N]``."""

    def __init__(
        self, num_envs: int, capacity: int, entry_shape: tuple[int, ...], device: torch.device | str,
        dtype: torch.dtype = torch.float32, saved_dtype: torch.dtype | None = None,
    ) -> None:
        """``saved_dtype``: dtype of ``entries`` in :meth:`state_dict` (default ``dtype``); e.g. uint8 for
        grayscale frames that are kept as float32 for speed."""
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if capacity < 1:
            raise ValueError(f"memory capacity must be >= 1 entry, got {capacity}")
        self.num_envs = num_envs
        self.capacity = capacity
        self.device = torch.device(device)
        self.saved_dtype = saved_dtype or dtype
        self.entries = torch.zeros((num_envs, capacity, *entry_shape), dtype=dtype, device=self.device)
        """[N, K, *E] ring buffer; env i writes slot counts[i] % K next."""
        self.counts = torch.zeros(num_envs, dtype=torch.int64, device=self.device)
        """[N] entries written to each env's memory since its episode began (0 = empty)."""

    def mask(self) -> torch.Tensor:
        """bool ``[N, K]``: True where a slot holds an entry of the current episode."""
        return history_mask(self.counts, self.capacity)

    def fill_empty(self, start: torch.Tensor, encode: Callable[[torch.Tensor], torch.Tensor]) -> None:
        """Give each empty env (count 0) its first entry ``encode(start[empty])``.

        ``start [N, ...]`` is the observation each env's step started from (an empty env's reset frame);
        ``encode`` maps ``[B, ...] -> [B, *E]`` and is called only on the empty envs, not at all if none is.
        """
        empty = self.counts == 0
        if bool(empty.any()):
            self.entries[empty, 0] = encode(start.to(self.device)[empty]).to(self.entries.dtype)
            self.counts[empty] = 1

    def push(self, entries: torch.Tensor, where: torch.Tensor | None = None) -> None:
        """Append one entry per env: ``entries [N, *E]`` go to slots ``counts % K``; counts grow by 1.
        With bool ``where [N]``, only the envs where it is True append (the others keep their memory)."""
        envs = torch.arange(self.num_envs, device=self.device)
        if where is not None:
            envs = envs[where.to(self.device)]
            entries = entries[where.to(entries.device)]
        self.entries[envs, self.counts[envs] % self.capacity] = entries.to(self.entries.dtype)
        self.counts[envs] += 1

    def clear(self, envs: torch.Tensor) -> None:
        """Empty the memories of the envs where bool ``envs [N]`` is True (their episode ended)."""
        self.counts[envs] = 0

    def state_dict(self) -> dict:
        """``{"entries": [N, K, *E] saved_dtype, "counts": [N] int64}``, CPU copies."""
        return cpu_copy({"entries": self.entries.to(self.saved_dtype), "counts": self.counts})

    def load_state_dict(self, state: dict) -> None:
        """Restore from :meth:`state_dict`'s output; ValueError if a shape differs."""
        self.entries = load_tensor(state["entries"], self.entries)
        self.counts = load_tensor(state["counts"], self.counts)
