"""The actor's side of the real-time runner: the weights it pulls from the learner, the rollouts
it fills and hands over, the step timings it records.

Shapes: ``T`` steps of one live env (N = 1), observations ``[C, H, W]`` uint8.

Neither thread ever waits for the other's work: the locks below are held only to swap a
reference (microseconds), never while copying tensors or training.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from wanderlust.agent.actor_critic import ActOutput

Item = TypeVar("Item")

LATE_TOLERANCE = 0.1
"""A step is late when it took more than ``(1 + LATE_TOLERANCE)`` control periods."""
TIMING_WINDOW = 100_000
"""Per-step timings kept for percentiles (the most recent ones)."""


def is_late(period_s: float, hz: float) -> bool:
    """True when a step that took ``period_s`` seconds missed the ``hz`` control rate."""
    return period_s > (1.0 + LATE_TOLERANCE) / hz


class WeightPublisher:
    """The newest policy weights, published by the learner and pulled by the actor.

    ``publish`` stores a fresh CPU snapshot of a module's ``state_dict`` with a version number
    (the learner's update count); a published snapshot is never written again, so the actor can
    copy from it without holding the lock while the learner publishes the next one.

    Example:
        >>> publisher = WeightPublisher()
        >>> publisher.publish(learner_agent, version=3)
        >>> version = publisher.pull(actor_agent, have=-1)  # copies, returns 3
        >>> publisher.pull(actor_agent, have=version)       # nothing new: no copy, returns 3
        3
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot: dict[str, torch.Tensor] | None = None
        self._version = -1

    @property
    def version(self) -> int:
        """Version of the newest snapshot; -1 before the first ``publish``."""
        return self._version

    def publish(self, module: nn.Module, version: int) -> None:
        """Snapshot ``module``'s parameters and buffers (copied to CPU) as ``version``."""
        if version < 0:
            raise ValueError(f"weight versions are >= 0, got {version}")
        snapshot = {name: tensor.detach().to("cpu", copy=True) for name, tensor in module.state_dict().items()}
        with self._lock:
            if version < self._version:
                raise ValueError(f"weight version {version} is older than the published {self._version}")
            self._snapshot, self._version = snapshot, version

    def pull(self, module: nn.Module, have: int) -> int:
        """Load the newest snapshot into ``module`` if it is newer than version ``have``; return
        the version ``module`` now holds."""
        with self._lock:
            snapshot, version = self._snapshot, self._version
        if snapshot is None or version == have:
            return have
        module.load_state_dict(snapshot)
        return version


class RolloutQueue(Generic[Item]):
    """A bounded FIFO whose ``put`` never blocks: when it is full, the oldest item is dropped.

    The actor puts finished rollouts; the learner takes them in order. When the learner falls
    behind, the freshest rollouts are kept (the dropped ones would be the most off-policy) and
    ``dropped`` counts the losses.
    """

    def __init__(self, capacity: int) -> None:
        if type(capacity) is not int or capacity < 1:
            raise ValueError(f"the rollout queue needs a capacity >= 1, got {capacity!r}")
        self.capacity = capacity
        self.dropped = 0
        """Items dropped so far because the queue was full."""
        self._items: deque[Item] = deque()
        self._ready = threading.Condition(threading.Lock())

    def put(self, item: Item) -> bool:
        """Append ``item``; returns True if the oldest item was dropped to make room."""
        with self._ready:
            dropped = len(self._items) >= self.capacity
            if dropped:
                self._items.popleft()
                self.dropped += 1
            self._items.append(item)
            self._ready.notify()
        return dropped

    def get(self, timeout: float) -> Item | None:
        """The oldest item, waiting up to ``timeout`` seconds for one; None if none came."""
        with self._ready:
            if not self._items:
                self._ready.wait(timeout)
            return self._items.popleft() if self._items else None

    def __len__(self) -> int:
        with self._ready:
            return len(self._items)


@dataclass
class ActorRollout:
    """T consecutive steps of the single live env (N = 1), as the actor played them; CPU tensors."""

    obs: torch.Tensor
    """[T, C, H, W] uint8: what the policy saw."""
    next_obs: torch.Tensor
    """[T, C, H, W] uint8: the frame each action produced (the final frame at an episode end)."""
    actions: torch.Tensor
    """[T, A] float32 raw pre-tanh or bin indices (Box) or [T] int64 (Discrete): ``ActOutput.action``."""
    env_actions: torch.Tensor
    """[T, A] float32 or [T] int64: what the env received."""
    log_probs: torch.Tensor
    """[T] behaviour log pi(a|s) of the weights that acted."""
    rewards_ext: torch.Tensor
    """[T] the game's reward."""
    terminated: torch.Tensor
    """[T] bool."""
    truncated: torch.Tensor
    """[T] bool."""
    policy_versions: torch.Tensor
    """[T] int64: the published weight version (learner update count) each action came from."""
    last_obs: torch.Tensor | None = None
    """[C, H, W] uint8: the observation after the rollout, for bootstrapping."""
    end_step: int = 0
    """Env steps of the run (all sessions) when the rollout was finished."""
    seconds: float = math.nan
    """Wall time the T steps took (resets included)."""
    late_steps: int = 0
    """Late steps of this session so far, when the rollout was finished."""
    episodes: list[tuple[float, float, float]] = field(default_factory=list)
    """(return, length, coverage or nan) of each episode that ended in the rollout."""

    @classmethod
    def empty(cls, num_steps: int, obs_shape: tuple[int, ...], action_space: spaces.Space) -> ActorRollout:
        discrete = isinstance(action_space, spaces.Discrete)
        action_shape, action_dtype = ((), torch.int64) if discrete else (tuple(action_space.shape), torch.float32)
        T = num_steps
        return cls(
            obs=torch.zeros((T, *obs_shape), dtype=torch.uint8),
            next_obs=torch.zeros((T, *obs_shape), dtype=torch.uint8),
            actions=torch.zeros((T, *action_shape), dtype=action_dtype),
            env_actions=torch.zeros((T, *action_shape), dtype=action_dtype),
            log_probs=torch.zeros(T), rewards_ext=torch.zeros(T),
            terminated=torch.zeros(T, dtype=torch.bool), truncated=torch.zeros(T, dtype=torch.bool),
            policy_versions=torch.zeros(T, dtype=torch.int64),
        )

    def record(self, t: int, act: ActOutput, next_obs: np.ndarray, reward: float, terminated: bool,
               truncated: bool, version: int) -> None:
        """Store step ``t`` (its observation is already in ``obs[t]``): ``act`` for a batch of one."""
        self.next_obs[t] = torch.as_tensor(np.asarray(next_obs))
        self.actions[t], self.env_actions[t] = act.action[0], act.env_action[0]
        self.log_probs[t], self.rewards_ext[t] = act.log_prob[0], float(reward)
        self.terminated[t], self.truncated[t] = bool(terminated), bool(truncated)
        self.policy_versions[t] = version


class ActorStats:
    """What the actor measures; written by the actor thread only, read by the others."""

    def __init__(self, hz: float) -> None:
        self.hz = hz
        self.steps = 0
        """Steps taken in this session."""
        self.late_steps = 0
        self.periods: deque[float] = deque(maxlen=TIMING_WINDOW)
        """Seconds between consecutive step returns (the achieved control period)."""
        self.decisions: deque[float] = deque(maxlen=TIMING_WINDOW)
        """Seconds from an observation's arrival to its action going into ``env.step``."""
        self.started = math.nan
        self.last_step_time = math.nan

    def record(self, period_s: float, decision_s: float, now: float, late: bool | None = None) -> None:
        """One step; ``late`` as the env reported it (``info["late"]``), else judged by :func:`is_late`."""
        self.periods.append(period_s)
        self.decisions.append(decision_s)
        self.late_steps += bool(late) if late is not None else is_late(period_s, self.hz)
        self.steps += 1
        self.last_step_time = now

    def achieved_hz(self) -> float:
        """Steps per second of wall time from the first observation to the latest step."""
        elapsed = self.last_step_time - self.started
        return self.steps / elapsed if elapsed > 0 else math.nan
