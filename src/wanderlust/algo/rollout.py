"""A rollout as rollout workers return it (numpy, no values), and how the learner stores it.

Workers only act: they step their ``n`` envs ``T`` times with a policy copy and send back what
happened (:class:`Rollout`). The learner merges the workers' rollouts along the env axis into
``[T, N]``, computes the values ``V_ext, V_int`` of every observation with its own network (the
weights did not change during the rollout, so they equal the values at acting time up to float
rounding), adds the time-limit bootstrap ``gamma * V_ext(final obs)`` and fills
:class:`~wanderlust.algo.storage.RolloutStorage`; from there training is the same as in-process.

Frames are sent once: ``next_obs[t] = obs[t + 1]`` (``last_obs`` for ``t = T - 1``) except where an
episode ended, whose final frames travel in ``final_obs`` (:func:`produced_observations`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from wanderlust.agent.actor_critic import ActorCritic
from wanderlust.algo.storage import RolloutStorage

VALUE_CHUNK = 1024
"""Observations per value forward pass on the learner."""


@dataclass
class Rollout:
    """``T`` steps of ``n`` envs, numpy only (what crosses process and machine boundaries)."""

    obs: np.ndarray
    """Observations the actions were taken in, ``[T, n, C, H, W]`` uint8 (or ``[T, n, D]`` float32)."""
    last_obs: np.ndarray
    """The observation to continue from, ``[n, ...]`` (a reset observation where an episode just ended)."""
    final_obs: np.ndarray
    """Final observations of the episodes that ended, ``[K, ...]``, in row-major ``(t, env)`` order of the ends."""
    actions: np.ndarray
    """Storage-form actions: float32 ``[T, n, A]`` (raw pre-tanh, or bin indices) or int64 indices ``[T, n]``."""
    env_actions: np.ndarray
    """What the envs received: float32 ``[T, n, A]`` in [-1, 1] or int64 ``[T, n]``."""
    log_probs: np.ndarray
    """Behaviour log-probabilities ``log pi_old(a|s)`` float32 ``[T, n]``."""
    rewards: np.ndarray
    """Extrinsic rewards float32 ``[T, n]`` (no bootstrap: the learner adds it)."""
    terminated: np.ndarray
    """bool ``[T, n]``: the episode reached a terminal state at this step."""
    truncated: np.ndarray
    """bool ``[T, n]``: the episode was cut (time limit) at this step."""
    episode_returns: list[float]
    """Raw returns of the episodes that finished during the rollout."""
    episode_lengths: list[int]
    """Their lengths in steps."""
    episode_coverages: list[float]
    """Their final coverage, for envs that report ``info['coverage']`` (the maze)."""
    seconds: float = 0.0
    """Time the worker spent collecting (loading weights included); the learner's wait minus this is overhead."""

    @property
    def ends(self) -> np.ndarray:
        """bool ``[T, n]``: an episode ended at this step (terminated or truncated)."""
        return np.logical_or(self.terminated, self.truncated)


def produced_observations(rollout: Rollout) -> np.ndarray:
    """The frames the actions produced, ``[T, n, ...]``: the next observation, or the final one
    where an episode ended (never the reset observation)."""
    ends = rollout.ends
    if len(rollout.final_obs) != int(ends.sum()):
        raise ValueError(f"rollout has {int(ends.sum())} episode ends but {len(rollout.final_obs)} final observations")
    produced = np.concatenate([rollout.obs[1:], rollout.last_obs[None]], axis=0)
    produced[ends] = rollout.final_obs  # boolean indexing walks (t, env) in row-major order
    return produced


def merge_rollouts(rollouts: list[Rollout]) -> Rollout:
    """Workers' rollouts ``[T, n_k]`` -> one ``[T, sum n_k]`` rollout, envs in worker order."""
    if not rollouts:
        raise ValueError("merge_rollouts needs at least one rollout")
    if len(rollouts) == 1:
        return rollouts[0]
    steps = {r.obs.shape[0] for r in rollouts}
    if len(steps) != 1:
        raise ValueError(f"workers returned rollouts of different lengths {sorted(steps)}")

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(r, name) for r in rollouts], axis=1)

    terminated, truncated = cat("terminated"), cat("truncated")
    return Rollout(
        obs=cat("obs"), last_obs=np.concatenate([r.last_obs for r in rollouts], axis=0),
        final_obs=_final_obs_in_merged_order(rollouts), actions=cat("actions"), env_actions=cat("env_actions"),
        log_probs=cat("log_probs"), rewards=cat("rewards"), terminated=terminated, truncated=truncated,
        episode_returns=[x for r in rollouts for x in r.episode_returns],
        episode_lengths=[x for r in rollouts for x in r.episode_lengths],
        episode_coverages=[x for r in rollouts for x in r.episode_coverages],
        seconds=max(r.seconds for r in rollouts),
    )


def _final_obs_in_merged_order(rollouts: list[Rollout]) -> np.ndarray:
    """Each worker lists its final frames in its own ``(t, env)`` order; the merged rollout needs
    them in ``(t, global env)`` order, which interleaves the workers."""
    total_envs = sum(r.obs.shape[1] for r in rollouts)
    keys, offset = [], 0
    for r in rollouts:
        t, env = np.nonzero(r.ends)
        keys.append(t * total_envs + offset + env)
        offset += r.obs.shape[1]
    order = np.argsort(np.concatenate(keys), kind="stable")
    return np.concatenate([r.final_obs for r in rollouts], axis=0)[order]


def finished_episodes(infos: dict) -> tuple[list[float], list[int], list[float]]:
    """Returns, lengths and coverages of the episodes that ended this step (same-step autoreset infos)."""
    final = infos.get("final_info")
    if not final:
        return [], [], []
    returns: list[float] = []
    lengths: list[int] = []
    coverages: list[float] = []
    if "episode" in final:
        done = final["_episode"]
        returns = final["episode"]["r"][done].tolist()
        lengths = final["episode"]["l"][done].tolist()
    if "coverage" in final:
        coverages = final["coverage"][final["_coverage"]].tolist()
    return returns, lengths, coverages


@torch.no_grad()
def store_rollout(agent: ActorCritic, storage: RolloutStorage, rollout: Rollout, gamma: float) -> np.ndarray:
    """Fill ``storage`` [T, N] from a merged rollout: transitions as collected, values from
    ``agent``, extrinsic rewards plus ``gamma * V_ext(final obs)`` where an episode was truncated
    (time limit) rather than terminated. Returns the observation to continue from ``[N, ...]``."""
    T, N = storage.num_steps, storage.num_envs
    if rollout.obs.shape[:2] != (T, N):
        raise ValueError(f"rollout is shaped {list(rollout.obs.shape[:2])}, storage expects [T, N] = [{T}, {N}]")
    device = storage.obs.device
    storage.obs.copy_(torch.from_numpy(rollout.obs))
    storage.next_obs.copy_(torch.from_numpy(produced_observations(rollout)))
    storage.actions.copy_(torch.from_numpy(rollout.actions))
    storage.env_actions.copy_(torch.from_numpy(rollout.env_actions))
    storage.log_probs.copy_(torch.from_numpy(rollout.log_probs))
    flat_obs = storage.flat(storage.obs)
    values = [agent.values(flat_obs[i:i + VALUE_CHUNK]) for i in range(0, T * N, VALUE_CHUNK)]
    storage.values_ext.copy_(torch.cat([v[0] for v in values]).reshape(T, N))
    storage.values_int.copy_(torch.cat([v[1] for v in values]).reshape(T, N))
    rewards = torch.from_numpy(rollout.rewards.astype(np.float32)).to(device)
    cut = torch.from_numpy(np.logical_and(rollout.truncated, ~rollout.terminated)).to(device)
    if cut.any():  # time limit: bootstrap from the value of the final frame
        rewards[cut] += gamma * agent.values(storage.next_obs[cut])[0]
    storage.rewards_ext.copy_(rewards)
    storage.episode_ends.copy_(torch.from_numpy(rollout.ends))
    return rollout.last_obs
