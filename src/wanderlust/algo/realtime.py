"""The real-time runner: an actor thread plays a live env at its control rate while a learner
thread trains on the rollouts it finishes (DESIGN.md section 2). The actor never waits.

    actor thread    obs -> CPU copy of the policy (1 torch thread) -> env.step (the env keeps the
                    rate) -> ActorRollout [T] -> RolloutQueue (bounded; when full the oldest is dropped)
    learner thread  rollout -> values (current weights) -> novelty (sequential modules step by step)
                    -> intrinsic normalization -> GAE -> ppo_update (behaviour log-probs) ->
                    novelty.update -> log, checkpoint -> WeightPublisher -> actor, between two steps
    main thread     waits, drives the progress bar, turns Ctrl-C / SIGTERM / max_seconds into a
                    clean stop (learner finishes its update, env closed, checkpoint saved)

Choices:
- PPO's ratio uses the log-probs the actor recorded, so it corrects the lag between the weights
  that acted and the ones being updated (``charts/policy_lag``, in updates).
- Values for GAE (and the value-clip baseline) are recomputed with the learner's current weights:
  a forward pass over T frames, cheaper than one PPO epoch, and a fresher critic than the lagged
  behaviour values. Truncated episodes bootstrap from ``V(final frame)`` the same way.
- Torch threads: with the OpenMP backend (``torch.__config__.parallel_info()``; PyTorch's Linux
  wheels) ``torch.set_num_threads`` sets the calling OS thread's team size (and the default for
  threads not yet started; ``tests/test_realtime.py`` checks it),
  so each thread sets its own at start: the actor 1, the learner ``config.torch_threads`` or
  ``cores - 1`` (at least 1). Measured on 2 cores (``benchmarks/realtime.py --threads``): 1 + 1
  gives the actor's forward the lowest p50/p99 and the learner the most minibatches per second;
  2 + 2 oversubscribes the cores and is worse for both.
- Late steps are the env's own count (``info["late"]``, as ScreenEnv and ControlRate report)
  or, when it reports none, steps longer than ``(1 + LATE_TOLERANCE) / hz``.
- Dropped rollouts leave a gap in the memory of sequential novelty modules (pixel, episodic), as
  if the game had skipped ahead; they are counted in ``charts/dropped_rollouts``.
- Not bit-reproducible: the actor samples from torch's global generator while the learner runs.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

from wanderlust.agent.actor_critic import build_agent
from wanderlust.agent.noise import make_held_noise
from wanderlust.algo.ppo import learning_rate_at, ppo_update
from wanderlust.algo.storage import RolloutStorage
from wanderlust.algo.trainer import Learner, TrainResult, compute_advantages, intrinsic_rewards, resolve_device
from wanderlust.algo.weights import LATE_TOLERANCE, ActorRollout, ActorStats, RolloutQueue, WeightPublisher
from wanderlust.envs.screen.env import Ticker
from wanderlust.envs.screen.errors import StopRequested
from wanderlust.runtime.checkpoint import load_checkpoint, save_checkpoint
from wanderlust.runtime.config import TrainConfig
from wanderlust.runtime.logger import MetricLogger, ProgressBar
from wanderlust.runtime.rng import seed_everything

CLEAN_STOPS = (KeyboardInterrupt, StopRequested)
"""Raised in a thread (by ``on_update``, or by the env: Ctrl-C, the stop hotkey) they end the run cleanly."""
ACTOR_JOIN_SECONDS = 10.0
"""How long shutdown waits for the actor to leave ``env.step`` before closing the env anyway."""


class ControlRate(gym.Wrapper):
    """Paces any env to ``hz`` steps per second of wall time, like a live game's control loop.

    ``step`` runs the inner step, then waits for the next tick of the screen env's
    :class:`~wanderlust.envs.screen.env.Ticker` (a late tick restarts the schedule, no catch-up
    burst) and reports ``info["late"]``. Sets ``metadata["render_fps"] = hz``. State: the ticker.
    """

    def __init__(self, env: gym.Env, hz: float, clock: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if not hz > 0:
            raise ValueError(f"the control rate must be > 0 Hz, got {hz!r}")
        super().__init__(env)
        self.metadata = {**env.metadata, "render_fps": hz}
        self.ticker = Ticker(1.0 / hz, LATE_TOLERANCE, clock, sleep)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        result = self.env.reset(seed=seed, options=options)
        self.ticker.start()
        return result

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        _, late = self.ticker.wait()
        return obs, reward, terminated, truncated, {**info, "late": late}


def learn_from_rollout(learner: Learner, storage: RolloutStorage, rollout: ActorRollout) -> dict[str, float]:
    """One PPO update of ``learner`` on one actor rollout; ``storage`` is ``[T, 1]``.

    Returns ``charts/learning_rate``, ``charts/policy_lag``, ``novelty/reward_*``, ``losses/*`` and
    the novelty module's metrics. Sets ``learner.global_step = rollout.end_step``.
    """
    agent, ppo, device = learner.agent, learner.config.ppo, learner.device
    T = storage.num_steps
    if rollout.obs.shape[0] != T or storage.num_envs != 1:
        raise ValueError(f"rollout of {rollout.obs.shape[0]} steps for storage [{T}, {storage.num_envs}]; need [T, 1]")
    for name in ("obs", "next_obs", "actions", "env_actions", "log_probs"):
        getattr(storage, name)[:, 0] = getattr(rollout, name).to(device)
    storage.episode_ends[:, 0] = (rollout.terminated | rollout.truncated).to(device)
    rewards = rollout.rewards_ext.to(device, copy=True)
    cut = (rollout.truncated & ~rollout.terminated).to(device)
    if cut.any():  # time limit: bootstrap from the value of the final frame
        rewards[cut] += ppo.gamma * agent.values(storage.next_obs[:, 0][cut])[0]
    storage.rewards_ext[:, 0] = rewards
    values_ext, values_int = agent.values(storage.obs[:, 0])  # the learner's current critic
    storage.values_ext[:, 0], storage.values_int[:, 0] = values_ext, values_int
    raw_intrinsic = intrinsic_rewards(learner, storage)
    advantages = compute_advantages(learner, storage, rollout.last_obs.unsqueeze(0).numpy())

    num_updates = learner.config.num_updates
    iteration = min(max(rollout.end_step // T - 1, 0), num_updates - 1)  # wall-clock progress, drops included
    learner.optimizer.param_groups[0]["lr"] = learning_rate_at(ppo, iteration, num_updates)
    policy_lag = learner.updates - float(rollout.policy_versions.double().mean())
    ppo_metrics = ppo_update(agent, learner.optimizer, storage.ppo_batch(*advantages), ppo, learner.generator)
    novelty_metrics = learner.novelty.update(storage.novelty_batch())
    learner.updates += 1
    learner.global_step = rollout.end_step
    return {
        "charts/learning_rate": learner.optimizer.param_groups[0]["lr"],
        "charts/policy_lag": policy_lag,
        "novelty/reward_raw_mean": float(raw_intrinsic.mean()),
        "novelty/reward_mean": float(storage.rewards_int.mean()),
        **ppo_metrics, **novelty_metrics,
    }


@dataclass
class RealtimeResult(TrainResult):
    """:class:`TrainResult` plus what the actor measured in this session."""

    actor_steps: int = 0
    """Env steps the actor took in this session."""
    late_steps: int = 0
    """Steps that missed their tick (``info["late"]``, else longer than ``(1 + LATE_TOLERANCE) / hz``)."""
    dropped_rollouts: int = 0
    """Rollouts dropped because the learner was behind."""
    actor_hz: float = math.nan
    """Achieved control rate over the session."""
    stopped_by: str = "steps"
    """Why the run ended: ``steps`` (total_steps), ``time`` (max_seconds), ``interrupt`` (Ctrl-C,
    SIGTERM, KeyboardInterrupt from on_update) or ``hotkey`` (the env raised StopRequested)."""
    step_periods: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """[S] seconds between consecutive steps (the most recent TIMING_WINDOW)."""
    decision_latencies: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """[S] seconds from an observation's arrival to its action going into ``env.step``."""


def set_thread_torch_threads(count: int) -> None:
    """Set the calling OS thread's torch intra-op threads (OpenMP backend, see the module doc).

    Torch initialises a thread's count once, lazily, from the process default (the last value
    any thread set); running that initialisation first keeps it from undoing ours later.
    """
    torch.get_num_threads()
    torch.set_num_threads(count)


def learner_threads(config: TrainConfig) -> int:
    """Torch threads for the learner: ``config.torch_threads``, else all cores but the actor's."""
    if config.torch_threads:
        return config.torch_threads
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores - 1)


def train_realtime(
    config: TrainConfig, env: gym.Env, run_dir: Path, resume: bool = False, show_progress: bool = True,
    on_update: Callable[[Learner, dict[str, float]], None] | None = None, max_seconds: float | None = None,
    hz: float | None = None, queue_size: int = 2,
) -> RealtimeResult:
    """Train on a live ``env`` (one Gymnasium env of preprocessed frames ``[C, H, W]`` uint8 that
    keeps its own control rate) into ``run_dir``; resume from its latest checkpoint.

    Stops when ``config.total_steps`` env steps are reached (queued rollouts are trained first),
    after ``max_seconds``, on Ctrl-C / SIGTERM, or when ``on_update`` (called in the learner
    thread) or the env raises KeyboardInterrupt or ``StopRequested`` (the stop hotkey): the
    learner finishes its update, the env is closed and a checkpoint is saved. Any other exception in either thread stops both, closes
    the env and is raised here. ``env.close()`` is called on every path.

    ``hz`` is the env's control rate (default ``env.metadata["render_fps"]``), used to count
    late steps; ``queue_size`` rollouts wait for the learner before the oldest is dropped.
    """
    hz = hz if hz is not None else env.metadata.get("render_fps")
    in_main = threading.current_thread() is threading.main_thread()
    previous_sigterm = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt) if in_main else None
    try:
        try:
            _check_inputs(config, env, hz, queue_size, max_seconds)
            session = _Session(config, env, run_dir, resume, float(hz), queue_size, on_update)
        except BaseException:
            env.close()
            raise
        return session.run(show_progress, max_seconds)
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous_sigterm)


def _check_inputs(config: TrainConfig, env: gym.Env, hz, queue_size: int, max_seconds: float | None) -> None:
    config.validate()
    if config.env.num_envs != 1:
        raise ValueError(f"the real-time runner plays one live env: set env.num_envs = 1 (got {config.env.num_envs})")
    space = env.observation_space
    if not (isinstance(space, spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3):
        raise ValueError(f"the real-time runner needs preprocessed frames [C, H, W] uint8, got {space}")
    if hz is None or not hz > 0:
        raise ValueError(f"unknown control rate {hz!r}: pass hz=... or set env.metadata['render_fps']")
    if type(queue_size) is not int or queue_size < 1:
        raise ValueError(f"queue_size must be an int >= 1, got {queue_size!r}")
    if max_seconds is not None and not max_seconds > 0:
        raise ValueError(f"max_seconds must be > 0 or None, got {max_seconds!r}")


class _Session:
    """One call of :func:`train_realtime`: the shared state of its three threads."""

    def __init__(self, config: TrainConfig, env: gym.Env, run_dir: Path, resume: bool, hz: float,
                 queue_size: int, on_update: Callable[[Learner, dict[str, float]], None] | None) -> None:
        seed_everything(config.seed)
        self.config, self.env, self.on_update = config, env, on_update
        self.checkpoints = Path(run_dir) / "checkpoints"
        resume_state = load_checkpoint(self.checkpoints) if resume else None
        self.learner = Learner(config, env.observation_space, env.action_space, resolve_device(config.device))
        if resume_state is not None:
            self.learner.load_state_dict(resume_state)
        self.actor_policy = build_agent(config, env.observation_space.shape, env.action_space)
        self.weights = WeightPublisher()
        self.weights.publish(self.learner.agent, self.learner.updates)
        self.rollouts: RolloutQueue[ActorRollout] = RolloutQueue(queue_size)
        self.stats = ActorStats(hz)
        self.storage = RolloutStorage(config.ppo.num_steps, 1, env.observation_space.shape, env.action_space,
                                      self.learner.device)
        self.first_step = self.learner.global_step
        self.last_step = config.num_updates * config.ppo.num_steps
        self.last_checkpoint_step = self.learner.global_step
        self.logger = MetricLogger(run_dir, purge_step=self.first_step + 1 if resume else None)
        self.stop = threading.Event()  # everyone stops now
        self.actor_done = threading.Event()  # the actor reached total_steps: the learner drains the queue
        self.errors: list[BaseException] = []
        self.interrupted = False
        self.stopped_by = "steps"
        self.returns, self.lengths, self.coverages = deque(maxlen=100), deque(maxlen=100), deque(maxlen=100)
        self.metrics: dict[str, float] = {}

    def run(self, show_progress: bool, max_seconds: float | None) -> RealtimeResult:
        progress = ProgressBar(total=max(self.last_step, self.first_step), initial=self.first_step,
                               disable=not show_progress)
        main_threads = torch.get_num_threads()
        actor = threading.Thread(target=self._guarded, args=(self._act,), name="wanderlust-actor", daemon=True)
        learner = threading.Thread(target=self._guarded, args=(self._learn,), name="wanderlust-learner", daemon=True)
        deadline = time.perf_counter() + max_seconds if max_seconds is not None else math.inf
        shown = 0
        try:
            actor.start()
            learner.start()
            while learner.is_alive():
                learner.join(0.1)
                if time.perf_counter() >= deadline and not self.stop.is_set():
                    self._stop_for("time")
                progress.update(self.stats.steps - shown, {
                    "hz": self.stats.achieved_hz(), "late": self.stats.late_steps,
                    "dropped": self.rollouts.dropped, "updates": self.learner.updates,
                })
                shown = self.stats.steps
        except KeyboardInterrupt:
            self._stop_for("interrupt")
        finally:
            self.stop.set()
            try:
                actor.join(ACTOR_JOIN_SECONDS)
            finally:
                self.env.close()  # releases a live game's inputs; also if the actor is stuck in step()
                learner.join()  # it finishes the update in progress, so its state is consistent
                torch.set_num_threads(main_threads)
                progress.close()
                self.logger.close()
        if self.errors:
            raise self.errors[0]
        if self.learner.global_step > self.last_checkpoint_step or not any(self.checkpoints.glob("ckpt-*")):
            self._save_checkpoint()
        stats = self.stats
        return RealtimeResult(
            self.learner.global_step, self.learner.updates, self.interrupted, self.metrics,
            actor_steps=stats.steps, late_steps=stats.late_steps, dropped_rollouts=self.rollouts.dropped,
            actor_hz=stats.achieved_hz(), stopped_by=self.stopped_by, step_periods=np.array(stats.periods),
            decision_latencies=np.array(stats.decisions),
        )

    def _guarded(self, body: Callable[[], None]) -> None:
        """Run a thread's body; any way out of it but the actor's normal end stops everyone."""
        try:
            body()
            return
        except CLEAN_STOPS as stop:
            self._stop_for("hotkey" if isinstance(stop, StopRequested) else "interrupt")
        except BaseException as error:  # noqa: BLE001  (re-raised by the main thread)
            self.errors.append(error)
            self.stop.set()

    def _stop_for(self, reason: str) -> None:
        """Stop both threads; the first reason given is the one reported."""
        if not self.stop.is_set():
            self.stopped_by = reason
            self.interrupted = reason in ("interrupt", "hotkey")
        self.stop.set()

    def _act(self) -> None:
        """The actor thread: step the env with the newest weights, hand over every T steps."""
        set_thread_torch_threads(1)
        env, policy, stats, T = self.env, self.actor_policy, self.stats, self.config.ppo.num_steps
        discrete = isinstance(env.action_space, spaces.Discrete)
        noise = make_held_noise(self.config.noise_hold, policy, 1)  # a live stick needs it most
        version = -1
        obs, _ = env.reset(seed=self.config.seed + 7919 * self.learner.updates)
        step = self.first_step
        stats.started = previous = time.perf_counter()
        while step < self.last_step:
            rollout = ActorRollout.empty(T, env.observation_space.shape, env.action_space)
            rollout_start = previous
            for t in range(T):
                if self.stop.is_set():
                    return  # the rollout in progress is dropped
                version = self.weights.pull(policy, version)
                rollout.obs[t] = torch.as_tensor(np.asarray(obs))
                with torch.inference_mode():
                    act = policy.act(rollout.obs[t:t + 1], noise=None if noise is None else noise.next())
                decided = time.perf_counter()
                env_action = int(act.env_action[0]) if discrete else act.env_action[0].numpy()
                next_obs, reward, terminated, truncated, info = env.step(env_action)
                now = time.perf_counter()
                stats.record(now - previous, decided - previous, now, info.get("late"))
                previous = now
                rollout.record(t, act, next_obs, reward, terminated, truncated, version)
                step += 1
                if terminated or truncated:
                    if noise is not None:
                        noise.episodes_ended(np.ones(1, dtype=bool))
                    rollout.episodes.append(_episode_summary(info))
                    obs, _ = env.reset()
                    previous = time.perf_counter()  # the reset's duration is not a control period
                else:
                    obs = next_obs
            rollout.last_obs = torch.as_tensor(np.asarray(obs)).clone()
            rollout.end_step, rollout.seconds, rollout.late_steps = step, previous - rollout_start, stats.late_steps
            self.rollouts.put(rollout)
        self.actor_done.set()

    def _learn(self) -> None:
        """The learner thread: train on each rollout, log, checkpoint, publish the new weights."""
        set_thread_torch_threads(learner_threads(self.config))
        learner, config = self.learner, self.config
        start_time, start_step = time.perf_counter(), learner.global_step
        while not self.stop.is_set():
            rollout = self.rollouts.get(timeout=0.05)
            if rollout is None:
                if self.actor_done.is_set() and not len(self.rollouts):
                    return
                continue
            update_start = time.perf_counter()
            metrics = learn_from_rollout(learner, self.storage, rollout)
            self.weights.publish(learner.agent, learner.updates)
            for episode_return, length, coverage in rollout.episodes:
                for values, value in ((self.returns, episode_return), (self.lengths, length), (self.coverages, coverage)):
                    if not math.isnan(value):
                        values.append(value)
            metrics.update({
                "charts/SPS": (learner.global_step - start_step) / max(time.perf_counter() - start_time, 1e-9),
                "charts/actor_hz": config.ppo.num_steps / rollout.seconds if rollout.seconds > 0 else math.nan,
                "charts/late_steps": float(rollout.late_steps),
                "charts/dropped_rollouts": float(self.rollouts.dropped),
                "charts/update_seconds": time.perf_counter() - update_start,
            })
            if self.returns:
                metrics["charts/episodic_return"] = _mean(self.returns)
                metrics["charts/episodic_length"] = _mean(self.lengths)
            if self.coverages:
                metrics["charts/coverage"] = _mean(self.coverages)
            self.metrics = metrics
            if learner.updates % config.log_every == 0:
                self.logger.log(learner.global_step, metrics)
            if self.on_update is not None:
                self.on_update(learner, metrics)
            if learner.global_step - self.last_checkpoint_step >= config.checkpoint_every:
                self._save_checkpoint()

    def _save_checkpoint(self) -> None:
        save_checkpoint(self.checkpoints, self.learner.global_step, self.learner.state_dict(),
                        keep=self.config.keep_checkpoints)
        self.last_checkpoint_step = self.learner.global_step


def _episode_summary(info: dict) -> tuple[float, float, float]:
    """(return, length, coverage) from the info of an episode's last step (nan where absent)."""
    episode = info.get("episode", {})
    return (float(episode.get("r", math.nan)), float(episode.get("l", math.nan)),
            float(info.get("coverage", math.nan)))


def _mean(values) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def _raise_keyboard_interrupt(signum, frame) -> None:  # SIGTERM -> same clean path as Ctrl-C
    raise KeyboardInterrupt(f"signal {signum}")
