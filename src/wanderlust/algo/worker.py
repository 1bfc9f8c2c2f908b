"""A rollout worker: its share of the envs plus a CPU policy copy with its own random stream.

Worker ``k`` of ``W`` owns envs ``[offset_k, offset_k + n_k)`` of the run's ``N`` (shares as even
as possible, :func:`worker_shares`). It only acts: ``collect(weights, T)`` loads the learner's
weights, steps its envs ``T`` times and returns a :class:`~wanderlust.algo.rollout.Rollout` with the
behaviour log-probs. Everything it does is fixed by the run seed and its :class:`WorkerSpec`, so the
same worker gives the same rollout in this process, in a subprocess or in a Ray actor (with the
same torch thread count), and parallel collection is exactly as reproducible as serial collection.

Seeds: env ``i`` (global index) is reset with ``seed + 7919 * start_update + i`` as in the
in-process runner; a replacement worker (``generation`` g > 0, after a crash) adds
``g * RESTART_SEED_STRIDE`` so it does not replay the episodes of the worker it replaces. The
policy's sampling stream is seeded from ``(seed, index, generation, start_update)``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass

import numpy as np
import torch

from wanderlust.agent.actor_critic import build_agent
from wanderlust.agent.noise import make_held_noise
from wanderlust.algo.rollout import Rollout, finished_episodes
from wanderlust.envs.factory import make_vector_env
from wanderlust.runtime.config import TrainConfig

RESET_SEED_STRIDE = 7919
"""Env seed step per update on (re)start, as the in-process runner uses on resume."""
RESTART_SEED_STRIDE = 1_000_003
"""Env seed step per replacement of a worker (a prime far above any env count)."""


@dataclass(frozen=True)
class WorkerSpec:
    """Which envs a worker owns and how it is seeded."""

    index: int
    """Worker slot, 0 .. workers - 1 (the order of its envs in the merged rollout)."""
    env_offset: int
    """Global index of its first env."""
    num_envs: int
    """How many envs it steps (n_k)."""
    generation: int = 0
    """0 for the first worker in this slot, +1 for every replacement after a crash."""
    start_update: int = 0
    """The learner's update counter when the worker was created (fresh episodes on resume and restart)."""

    def replacement(self, start_update: int) -> "WorkerSpec":
        """The spec of the worker that replaces this one at ``start_update``."""
        return dataclasses.replace(self, generation=self.generation + 1, start_update=start_update)


def worker_shares(num_envs: int, workers: int) -> list[tuple[int, int]]:
    """``(env_offset, num_envs)`` per worker: ``N`` envs split as evenly as possible, larger shares first.

    >>> worker_shares(8, 3)
    [(0, 3), (3, 3), (6, 2)]
    """
    if workers < 1 or num_envs < workers:
        raise ValueError(f"cannot split {num_envs} envs over {workers} workers: use 1 <= workers <= num_envs")
    base, extra = divmod(num_envs, workers)
    counts = [base + (1 if k < extra else 0) for k in range(workers)]
    offsets = np.cumsum([0, *counts[:-1]]).tolist()
    return list(zip(offsets, counts))


def initial_specs(num_envs: int, workers: int, start_update: int) -> list[WorkerSpec]:
    """The first worker of every slot."""
    shares = worker_shares(num_envs, workers)
    return [WorkerSpec(k, offset, count, 0, start_update) for k, (offset, count) in enumerate(shares)]


def env_reset_seed(seed: int, spec: WorkerSpec) -> int:
    """The seed for the worker's ``envs.reset``; its env ``j`` gets this plus ``j``."""
    return seed + RESET_SEED_STRIDE * spec.start_update + spec.env_offset + RESTART_SEED_STRIDE * spec.generation


def policy_seed(seed: int, spec: WorkerSpec) -> int:
    """Seed of the worker's action-sampling stream (independent across workers and generations)."""
    return int(np.random.SeedSequence([seed, spec.index, spec.generation, spec.start_update]).generate_state(1)[0])


def policy_weights(agent: torch.nn.Module) -> dict[str, np.ndarray]:
    """The agent's state as CPU numpy copies (what is broadcast to workers)."""
    return {name: tensor.detach().to("cpu", copy=True).numpy() for name, tensor in agent.state_dict().items()}


class RolloutWorker:
    """Envs ``[n]`` + a CPU policy copy; acts only. Used in-process, in a subprocess or as a Ray actor.

    ``torch_threads`` > 0 sets this process's torch thread count (workers in their own process use 1).
    """

    def __init__(self, config: TrainConfig, spec: WorkerSpec, torch_threads: int = 0) -> None:
        if torch_threads:
            torch.set_num_threads(torch_threads)
        self.spec = spec
        self.envs = make_vector_env(dataclasses.replace(config.env, num_envs=spec.num_envs))
        self.observation_space = self.envs.single_observation_space
        self.action_space = self.envs.single_action_space
        with torch.random.fork_rng(devices=[]):  # building the copy must not move the caller's RNG
            self.agent = build_agent(config, self.observation_space.shape, self.action_space)
            self.noise = make_held_noise(config.noise_hold, self.agent, spec.num_envs)
            torch.manual_seed(policy_seed(config.seed, spec))
            self._rng_state = torch.get_rng_state()
        self.obs, _ = self.envs.reset(seed=env_reset_seed(config.seed, spec))

    def spaces(self) -> tuple:
        """``(single observation space, single action space)`` of the envs."""
        return self.observation_space, self.action_space

    def pid(self) -> int:
        """The OS process the worker runs in (tests kill it)."""
        return os.getpid()

    def collect(self, weights: dict[str, np.ndarray], num_steps: int) -> Rollout:
        """Load ``weights``, step the envs ``T = num_steps`` times, return the rollout ``[T, n]``."""
        start = time.perf_counter()
        self.agent.load_state_dict({name: torch.tensor(array) for name, array in weights.items()})
        T, n = num_steps, self.spec.num_envs
        obs = np.empty((T, n, *self.obs.shape[1:]), self.obs.dtype)
        discrete = self.agent.is_discrete
        action_shape = (T, n) if discrete else (T, n, self.agent.action_dim)
        actions = np.empty(action_shape, np.int64 if discrete else np.float32)
        env_actions = np.empty_like(actions)
        log_probs = np.empty((T, n), np.float32)
        rewards = np.empty((T, n), np.float32)
        terminated = np.empty((T, n), bool)
        truncated = np.empty((T, n), bool)
        final_obs: list[np.ndarray] = []
        returns: list[float] = []
        lengths: list[int] = []
        coverages: list[float] = []
        with torch.random.fork_rng(devices=[]):  # the worker's own sampling stream
            torch.set_rng_state(self._rng_state)
            for t in range(T):
                obs[t] = self.obs
                step = self.agent.act(torch.from_numpy(self.obs), noise=None if self.noise is None else self.noise.next())
                self.obs, reward, terminated[t], truncated[t], infos = self.envs.step(step.env_action.numpy())
                if self.noise is not None:
                    self.noise.episodes_ended(np.logical_or(terminated[t], truncated[t]))
                actions[t], env_actions[t] = step.action.numpy(), step.env_action.numpy()
                log_probs[t] = step.log_prob.numpy()
                rewards[t] = reward
                for i in np.flatnonzero(np.logical_or(terminated[t], truncated[t])):
                    final_obs.append(np.asarray(infos["final_obs"][i]))
                done_returns, done_lengths, done_coverages = finished_episodes(infos)
                returns += done_returns
                lengths += done_lengths
                coverages += done_coverages
            self._rng_state = torch.get_rng_state()
        return Rollout(
            obs=obs, last_obs=self.obs.copy(),
            final_obs=np.stack(final_obs) if final_obs else np.empty((0, *obs.shape[2:]), obs.dtype),
            actions=actions, env_actions=env_actions, log_probs=log_probs, rewards=rewards,
            terminated=terminated, truncated=truncated, episode_returns=returns, episode_lengths=lengths,
            episode_coverages=coverages, seconds=time.perf_counter() - start,
        )

    def close(self) -> None:
        self.envs.close()
