"""The synchronous runner: vectorized envs -> rollout [T, N] -> novelty -> GAE -> PPO update.

Reads top to bottom in the order the data flows. The gradient of the PPO loss reaches the policy
only through log pi(a|s) and the value heads; the envs, frames and novelty rewards are constants
(DESIGN.md section 1).

With ``config.workers`` > 0 the rollout comes from a worker pool (local processes or Ray actors,
:mod:`wanderlust.algo.pool`) that only acts; the learner computes the values afterwards
(:func:`~wanderlust.algo.rollout.store_rollout`) and everything from the novelty on is the same.
"""

from __future__ import annotations

import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from wanderlust.agent.actor_critic import build_agent
from wanderlust.agent.noise import make_held_noise
from wanderlust.algo.gae import compute_gae
from wanderlust.algo.pool import WorkerPool, make_pool
from wanderlust.algo.ppo import learning_rate_at, ppo_update
from wanderlust.algo.rollout import finished_episodes, store_rollout
from wanderlust.algo.storage import RolloutStorage
from wanderlust.algo.worker import policy_weights
from wanderlust.envs.factory import is_maze, make_vector_env, obs_spec
from wanderlust.novelty import make_novelty
from wanderlust.novelty.base import NoveltyModule
from wanderlust.report.data import VisitCounter
from wanderlust.report.tb_images import log_run_images, novel_frames_image
from wanderlust.runtime.checkpoint import load_checkpoint, save_checkpoint
from wanderlust.runtime.config import TrainConfig
from wanderlust.runtime.logger import MetricLogger, ProgressBar
from wanderlust.runtime.normalize import DiscountedReturnNormalizer
from wanderlust.runtime.rng import capture_rng_state, restore_rng_state, seed_everything

STATE_FORMAT = "wanderlust-train-state/1"
NOVELTY_CHUNK = 1024  # transitions per novelty forward pass for whole-rollout modules


@dataclass
class TrainResult:
    global_step: int
    updates: int
    interrupted: bool
    last_metrics: dict[str, float]


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device '{name}' requested but CUDA is not available; use --device cpu")
    return device


class Learner:
    """The learning state of a run: agent, optimizer, novelty, normalizer, sampling RNG, counters.

    Everything here goes into checkpoints, so resume is exact.
    """

    def __init__(self, config: TrainConfig, observation_space, action_space, device: torch.device) -> None:
        self.config = config
        self.device = device
        self.agent = build_agent(config, observation_space.shape, action_space).to(device)
        self.exploration_noise = make_held_noise(config.noise_hold, self.agent, config.env.num_envs, device)
        """Held exploration noise of the in-process envs (None: fresh every step); not checkpointed,
        since a resumed run starts fresh episodes."""
        self.optimizer = torch.optim.Adam(self.agent.parameters(), lr=config.ppo.learning_rate, eps=1e-5)
        self.novelty: NoveltyModule = make_novelty(
            config.novelty_name, config.novelty, obs_spec(observation_space, config.env), action_space,
            config.env.num_envs, device,
        )
        self.intrinsic_normalizer = DiscountedReturnNormalizer(config.env.num_envs, config.ppo.gamma_int)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.global_step = 0
        self.updates = 0

    def state_dict(self) -> dict:
        return {
            "format": STATE_FORMAT,
            "config": self.config.to_dict(),
            "global_step": self.global_step,
            "updates": self.updates,
            "agent": self.agent.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "novelty_name": self.config.novelty_name,
            "novelty": self.novelty.state_dict(),
            "intrinsic_normalizer": self.intrinsic_normalizer.state_dict(),
            "generator": self.generator.get_state(),
            "rng": capture_rng_state(),
        }

    def load_state_dict(self, state: dict) -> None:
        if state.get("format") != STATE_FORMAT:
            raise ValueError(f"checkpoint holds '{state.get('format')}', not a {STATE_FORMAT} training state")
        if state["novelty_name"] != self.config.novelty_name:
            raise ValueError(
                f"checkpoint was trained with novelty '{state['novelty_name']}', not '{self.config.novelty_name}'"
            )
        self.agent.load_state_dict(state["agent"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.novelty.load_state_dict(state["novelty"])
        self.intrinsic_normalizer.load_state_dict(state["intrinsic_normalizer"])
        self.generator.set_state(state["generator"])
        restore_rng_state(state["rng"])
        self.global_step = int(state["global_step"])
        self.updates = int(state["updates"])


def _final_observations(next_obs: np.ndarray, ends: np.ndarray, infos: dict) -> np.ndarray:
    """The frames the actions produced: the reset obs replaced by ``final_obs`` where episodes ended."""
    if not ends.any():
        return next_obs
    produced = next_obs.copy()
    for i in np.flatnonzero(ends):
        produced[i] = infos["final_obs"][i]
    return produced


def _episode_stats(infos: dict, returns: deque, lengths: deque, coverages: deque) -> None:
    """Collect statistics of the episodes that ended this step (same-step autoreset infos)."""
    done_returns, done_lengths, done_coverages = finished_episodes(infos)
    returns.extend(done_returns)
    lengths.extend(done_lengths)
    coverages.extend(done_coverages)


def _mean(values) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def collect_rollout(
    envs, learner: Learner, storage: RolloutStorage, next_obs_np: np.ndarray,
    on_step: Callable[[dict], None] | None = None,
) -> tuple[np.ndarray, torch.Tensor]:
    """Step the envs T times, filling ``storage`` (including intrinsic rewards, normalized if
    configured). Returns the observation to continue from and the raw intrinsic rewards [T, N]."""
    agent, config, device = learner.agent, learner.config, learner.device
    for t in range(storage.num_steps):
        obs = torch.from_numpy(next_obs_np).to(device)
        noise = learner.exploration_noise
        step = agent.act(obs, noise=None if noise is None else noise.next())
        next_obs_np, reward, terminated, truncated, infos = envs.step(step.env_action.cpu().numpy())
        ends = np.logical_or(terminated, truncated)
        if noise is not None:
            noise.episodes_ended(ends)
        produced = torch.from_numpy(_final_observations(next_obs_np, ends, infos)).to(device)
        reward_t = torch.as_tensor(reward, dtype=torch.float32, device=device)
        cut = torch.from_numpy(np.logical_and(truncated, ~terminated)).to(device)
        if cut.any():  # time limit: bootstrap from the value of the final frame
            reward_t[cut] += config.ppo.gamma * agent.values(produced[cut])[0]
        ends_t = torch.from_numpy(ends).to(device)
        storage.obs[t], storage.next_obs[t] = obs, produced
        storage.actions[t], storage.env_actions[t] = step.action, step.env_action
        storage.log_probs[t], storage.values_ext[t], storage.values_int[t] = step.log_prob, step.value_ext, step.value_int
        storage.rewards_ext[t], storage.episode_ends[t] = reward_t, ends_t
        if on_step is not None:
            on_step(infos)
    return next_obs_np, intrinsic_rewards(learner, storage)


def collect_from_pool(
    pool: WorkerPool, learner: Learner, storage: RolloutStorage, returns: deque, lengths: deque, coverages: deque,
) -> tuple[np.ndarray, torch.Tensor]:
    """Broadcast the weights, collect ``[T, N]`` from the workers and fill ``storage`` (values from
    the learner, intrinsic rewards as :func:`collect_rollout`). Same return values."""
    rollout = pool.collect(policy_weights(learner.agent), storage.num_steps)
    next_obs_np = store_rollout(learner.agent, storage, rollout, learner.config.ppo.gamma)
    returns.extend(rollout.episode_returns)
    lengths.extend(rollout.episode_lengths)
    coverages.extend(rollout.episode_coverages)
    return next_obs_np, intrinsic_rewards(learner, storage)


def intrinsic_rewards(learner: Learner, storage: RolloutStorage) -> torch.Tensor:
    """Fill ``storage.rewards_int`` [T, N] from a collected rollout (normalized if configured) and
    return the raw rewards [T, N].

    Sequential modules are called once per step in time order (their memory sees the frames in
    the order they were played); whole-rollout modules get one pass over ``[T * N]`` in chunks.
    """
    novelty, T, N = learner.novelty, storage.num_steps, storage.num_envs
    if novelty.sequential:
        for t in range(T):
            storage.rewards_int[t] = novelty.reward(
                storage.obs[t], storage.next_obs[t], storage.env_actions[t], storage.episode_ends[t]
            )
    else:
        batch = storage.novelty_batch()
        ends = storage.flat(storage.episode_ends)
        storage.rewards_int.copy_(torch.cat([
            novelty.reward(batch.obs[i:i + NOVELTY_CHUNK], batch.next_obs[i:i + NOVELTY_CHUNK],
                           batch.actions[i:i + NOVELTY_CHUNK], ends[i:i + NOVELTY_CHUNK])
            for i in range(0, T * N, NOVELTY_CHUNK)
        ]).reshape(T, N))
    raw_intrinsic = storage.rewards_int.clone()
    if learner.config.normalize_intrinsic:
        storage.rewards_int.copy_(learner.intrinsic_normalizer.normalize(storage.rewards_int))
    return raw_intrinsic


def compute_advantages(
    learner: Learner, storage: RolloutStorage, next_obs_np: np.ndarray
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """GAE for both streams: extrinsic is episodic, intrinsic ignores episode ends (as RND).
    Returns (advantages_ext, advantages_int, returns_ext, returns_int), each [T, N]."""
    ppo = learner.config.ppo
    last_value_ext, last_value_int = learner.agent.values(torch.from_numpy(next_obs_np).to(learner.device))
    advantages_ext, returns_ext = compute_gae(
        storage.rewards_ext, storage.values_ext, storage.episode_ends, last_value_ext, ppo.gamma, ppo.gae_lambda
    )
    advantages_int, returns_int = compute_gae(
        storage.rewards_int, storage.values_int, torch.zeros_like(storage.episode_ends), last_value_int,
        ppo.gamma_int, ppo.gae_lambda,
    )
    return advantages_ext, advantages_int, returns_ext, returns_int


PoolFactory = Callable[[TrainConfig, int], WorkerPool]
"""Builds the worker pool for ``(config, start_update)``; the default is :func:`~wanderlust.algo.pool.make_pool`."""


def train(
    config: TrainConfig, run_dir: Path, resume: bool = False, show_progress: bool = True,
    on_update: Callable[[Learner, dict[str, float]], None] | None = None, pool_factory: PoolFactory = make_pool,
) -> TrainResult:
    """Train ``config`` into ``run_dir`` (created by the caller); resume from its latest checkpoint.

    SIGTERM is turned into KeyboardInterrupt for the whole call: once training has started, both
    end it cleanly with a checkpoint of the last finished update (``TrainResult.interrupted``);
    during set-up they propagate as KeyboardInterrupt (nothing to save yet). With ``config.workers``
    > 0, ``pool_factory`` builds the worker pool, which is closed at the end.
    """
    previous_sigterm = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        return _train(config, run_dir, resume, show_progress, on_update, pool_factory)
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)


def _train(
    config: TrainConfig, run_dir: Path, resume: bool, show_progress: bool,
    on_update: Callable[[Learner, dict[str, float]], None] | None, pool_factory: PoolFactory,
) -> TrainResult:
    config.validate()
    seed_everything(config.seed)
    if config.torch_threads:
        torch.set_num_threads(config.torch_threads)
    device = resolve_device(config.device)
    checkpoints = run_dir / "checkpoints"
    resume_state = load_checkpoint(checkpoints) if resume else None

    if config.workers:
        pool = pool_factory(config, int(resume_state["updates"]) if resume_state is not None else 0)
        envs, spaces_ = None, (pool.observation_space, pool.action_space)
    else:
        envs = make_vector_env(config.env)
        pool, spaces_ = None, (envs.single_observation_space, envs.single_action_space)
    source = pool if pool is not None else envs  # what steps the envs; closed at the end
    try:
        learner = Learner(config, *spaces_, device)
        if resume_state is not None:
            learner.load_state_dict(resume_state)
    except BaseException:
        source.close()
        raise
    agent, novelty, ppo = learner.agent, learner.novelty, config.ppo
    T, N = ppo.num_steps, config.env.num_envs
    storage = RolloutStorage(T, N, spaces_[0].shape, spaces_[1], device)

    # Anything logged after the checkpoint was taken is dropped, so the curve continues without duplicates.
    logger = MetricLogger(run_dir, purge_step=learner.global_step + 1 if resume else None)
    progress = ProgressBar(total=config.num_updates * T * N, initial=learner.global_step, disable=not show_progress)
    returns, lengths, coverages = deque(maxlen=100), deque(maxlen=100), deque(maxlen=100)
    # TensorBoard images: where the agent spends its steps (maze, in-process envs) and what it found novel.
    visits = VisitCounter(config.env.maze_size) if is_maze(config.env.env_id) and pool is None else None
    image_channels = (obs_spec(spaces_[0], config.env).channels_per_frame if len(spaces_[0].shape) == 3 else None)

    def on_step(infos: dict) -> None:
        _episode_stats(infos, returns, lengths, coverages)
        if visits is not None:
            visits.observe(infos)

    metrics: dict[str, float] = {}
    interrupted = False
    last_checkpoint_step = learner.global_step
    # On resume envs restart from fresh episodes, seeded by the update counter (workers seed theirs alike).
    next_obs_np = envs.reset(seed=config.seed + 7919 * learner.updates)[0] if pool is None else None
    start_time, start_step = time.perf_counter(), learner.global_step
    try:
        while learner.updates < config.num_updates:
            learner.optimizer.param_groups[0]["lr"] = learning_rate_at(ppo, learner.updates, config.num_updates)

            if pool is None:
                next_obs_np, raw_intrinsic = collect_rollout(envs, learner, storage, next_obs_np, on_step=on_step)
            else:
                next_obs_np, raw_intrinsic = collect_from_pool(pool, learner, storage, returns, lengths, coverages)
            learner.global_step += T * N
            advantages_ext, advantages_int, returns_ext, returns_int = compute_advantages(learner, storage, next_obs_np)

            # ---- learning: policy and values, then the novelty model ----
            ppo_metrics = ppo_update(
                agent, learner.optimizer, storage.ppo_batch(advantages_ext, advantages_int, returns_ext, returns_int),
                ppo, learner.generator,
            )
            novelty_metrics = novelty.update(storage.novelty_batch())
            learner.updates += 1

            # ---- logging and checkpoints ----
            sps = (learner.global_step - start_step) / max(time.perf_counter() - start_time, 1e-9)
            metrics = {
                "charts/SPS": sps,
                "charts/learning_rate": learner.optimizer.param_groups[0]["lr"],
                "charts/episodic_return": _mean(returns),
                "charts/episodic_length": _mean(lengths),
                "novelty/reward_raw_mean": float(raw_intrinsic.mean()),
                "novelty/reward_mean": float(storage.rewards_int.mean()),
                **ppo_metrics, **novelty_metrics,
            }
            if coverages:
                metrics["charts/coverage"] = _mean(coverages)
            if pool is not None:
                metrics["charts/worker_restarts"] = float(pool.restarts)
                metrics["charts/rollout_overhead_ms"] = pool.last_overhead_ms
            if learner.updates % config.log_every == 0 or learner.updates == config.num_updates:
                logger.log(learner.global_step, metrics)
            if config.image_every and (learner.updates % config.image_every == 0 or learner.updates == config.num_updates):
                frames = novel_frames_image(storage.next_obs, raw_intrinsic, image_channels) if image_channels else None
                log_run_images(logger, learner.global_step, visits.counts if visits is not None else None, frames)
                if visits is not None:
                    visits.reset()
            postfix = {"SPS": sps, "novelty": metrics["novelty/reward_raw_mean"]}
            if "charts/coverage" in metrics:
                postfix["coverage"] = metrics["charts/coverage"]
            progress.update(T * N, postfix)
            if on_update is not None:
                on_update(learner, metrics)
            if learner.global_step - last_checkpoint_step >= config.checkpoint_every:
                save_checkpoint(checkpoints, learner.global_step, learner.state_dict(), keep=config.keep_checkpoints)
                last_checkpoint_step = learner.global_step
    except KeyboardInterrupt:
        interrupted = True
        # The rollout in progress is dropped: the learner state is that of the last finished update.
        learner.global_step = learner.updates * T * N
    finally:
        progress.close()
        logger.close()
        source.close()
    # Reached on completion and on Ctrl-C/SIGTERM (not after a crash, whose state may be half-updated).
    if learner.global_step > last_checkpoint_step or not any(checkpoints.glob("ckpt-*")):
        save_checkpoint(checkpoints, learner.global_step, learner.state_dict(), keep=config.keep_checkpoints)
    return TrainResult(learner.global_step, learner.updates, interrupted, metrics)


def _raise_keyboard_interrupt(signum, frame) -> None:  # SIGTERM -> same clean path as Ctrl-C
    raise KeyboardInterrupt(f"signal {signum}")
