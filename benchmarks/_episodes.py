"""Evaluation helpers shared by the sparse-reward benchmarks (MiniGrid, MyWayHome, Montezuma).

Every policy, wanderlust's or Stable-Baselines3's, is judged by the same loop: :func:`play_episodes`
on a fresh env from ``make_env(config.env)`` (the preprocessing used in training), seeds
``seed, seed + 1, ...``, actions sampled from the policy. The torch RNG is saved and restored
around it, so evaluating during training does not change the training run's random stream.
An episode is a *success* when its return is above 0 (MiniGrid pays 1 - 0.9 * t / T on reaching
the goal and 0 otherwise; MyWayHome pays +1 for the vest and -0.0001 per tic).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import _common  # noqa: F401  (puts <repo>/src on sys.path)
import numpy as np

from wanderlust.algo import evaluate
from wanderlust.algo.trainer import Learner, train
from wanderlust.runtime.config import TrainConfig

ActionFn = Callable[[np.ndarray], object]
"""Maps one preprocessed observation to one env action."""


def success_rate(returns: Sequence[float]) -> float:
    """Fraction of episodes with a return above 0.

    >>> success_rate([0.0, 0.7, -0.2, 0.9])
    0.5
    """
    if not returns:
        raise ValueError("no episodes to judge: play at least one")
    return sum(r > 0.0 for r in returns) / len(returns)


def steps_to(curve: Sequence[tuple[int, float]], target: float) -> int | None:
    """The first step whose value is >= ``target`` in ``(step, value)`` points sorted by step; None if never.

    >>> steps_to([(100, 0.2), (200, 0.95), (300, 0.8)], 0.9)
    200
    """
    return next((step for step, value in curve if value >= target), None)


def mean_curve(curves: Sequence[Sequence[tuple[int, float]]]) -> list[tuple[int, float]]:
    """Pointwise mean of curves measured at the same steps (one per seed).

    >>> mean_curve([[(10, 0.0), (20, 1.0)], [(10, 0.5), (20, 0.5)]])
    [(10, 0.25), (20, 0.75)]
    """
    steps = [[step for step, _ in curve] for curve in curves]
    if not curves or any(s != steps[0] for s in steps):
        raise ValueError(f"curves must be measured at the same steps, got {steps}")
    return [(step, float(np.mean([curve[i][1] for curve in curves]))) for i, step in enumerate(steps[0])]


def play_episodes(config: TrainConfig, act: ActionFn, episodes: int, seed: int) -> list[tuple[float, dict]]:
    """``(return, last info)`` of ``episodes`` episodes played with ``act`` on ``config.env``."""
    return [(total, info) for _, total, info in evaluate.play_episodes(config.env, act, episodes, seed)]


def wanderlust_act(learner: Learner) -> ActionFn:
    """Sample the learner's current policy for one observation."""
    return evaluate.policy_action(learner.agent, noise_hold=learner.config.noise_hold)


def wanderlust_curve(
    config: TrainConfig, eval_every: int, episodes: int, eval_seed: int,
    measure: Callable[[list[tuple[float, dict]]], float] | None = None,
) -> list[tuple[int, float]]:
    """Train ``config`` (in a temporary run folder) and return ``(step, success rate)`` measured every
    ``eval_every`` env steps and after the last update (``measure`` replaces the success rate)."""
    measure = measure or (lambda played: success_rate([r for r, _ in played]))
    curve: list[tuple[int, float]] = []
    next_eval = eval_every

    def on_update(learner: Learner, metrics: dict[str, float]) -> None:
        nonlocal next_eval
        if learner.global_step >= next_eval or learner.updates == config.num_updates:
            curve.append((learner.global_step, measure(play_episodes(config, wanderlust_act(learner), episodes,
                                                                     eval_seed))))
            next_eval = learner.global_step + eval_every

    with tempfile.TemporaryDirectory(prefix="wanderlust-bench-") as tmp:
        train(config, Path(tmp), show_progress=False, on_update=on_update)
    return curve
