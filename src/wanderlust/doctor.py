"""`wanderlust doctor`: does the loss reach every weight, do torch and the env work, what machine is this.

The central check is the one the original agent failed: "No gradients provided for any variable".
``gradient_report`` takes any scalar loss and the named parameters it should train, and says in
plain words which parameters get no usable gradient and why.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass
class GradientReport:
    total: int
    problems: dict[str, str]
    """Parameter name -> why it gets no usable gradient."""
    summary: str

    @property
    def ok(self) -> bool:
        return not self.problems


def gradient_report(named_parameters: Iterable[tuple[str, nn.Parameter]], loss: torch.Tensor) -> GradientReport:
    """Backpropagate ``loss`` and classify every trainable parameter's gradient.

    Works on losses that cannot backpropagate at all (computed from a frame, a number or a
    ``.numpy()`` copy), which is exactly the original agent's mistake.
    """
    params = [(name, p) for name, p in named_parameters if p.requires_grad]
    for _, p in params:
        p.grad = None
    if not loss.requires_grad:
        reason = (
            "the loss does not depend on the model: it was computed from data outside the graph (a screenshot, "
            "a .numpy() copy, the game). Treat novelty as a reward and train with a policy-gradient loss "
            "through log pi(a|s), e.g. PPO"
        )
        return GradientReport(len(params), {name: reason for name, _ in params},
                              f"no gradient reaches any of the {len(params)} parameters: {reason}")
    loss.backward()
    return classify_gradients(params, "not used by the loss (no path from the loss to this parameter)")


def classify_gradients(params: list[tuple[str, nn.Parameter]], missing_reason: str) -> GradientReport:
    """Report on the gradients already in ``.grad``: missing, non-finite or exactly zero."""
    problems: dict[str, str] = {}
    for name, p in params:
        if p.grad is None:
            problems[name] = missing_reason
        elif not torch.isfinite(p.grad).all():
            problems[name] = "gradient has NaN or inf (check rewards, log-probs and learning rate)"
        elif not p.grad.any():
            problems[name] = "gradient is exactly zero (detached output, dead units or a loss that ignores it)"
    summary = (
        f"all {len(params)} parameters get finite, non-zero gradients" if not problems
        else f"{len(problems)} of {len(params)} parameters get no usable gradient"
    )
    return GradientReport(len(params), problems, summary)


def original_agent_loss(model: nn.Module, frame: np.ndarray, history: list[np.ndarray]) -> torch.Tensor:
    """The seed's loss, reproduced on purpose: novelty of a captured frame, mapped to [0, 1].

    The model's output only reaches the game through ``.numpy()`` -> gamepad -> screen, so the
    loss is a constant with respect to every weight.
    """
    obs = torch.from_numpy(frame).float().permute(2, 0, 1).unsqueeze(0)
    sticks = model(obs).detach().numpy()  # -> gamepad.update(): leaves the graph
    del sticks
    current = torch.from_numpy(frame.astype(np.float32))
    past = torch.from_numpy(np.stack(history).astype(np.float32))
    novelty = (current - past).abs().sum(dim=(1, 2, 3)).mean()
    return 1.0 - novelty / 1e7


def machine_report() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch threads": str(torch.get_num_threads()),
        "cpu cores": str(os.cpu_count()),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "not available (training on CPU)",
    }


def agent_gradient_report(config) -> tuple[GradientReport, dict[str, str]]:
    """Collect a tiny rollout with the configured env, novelty and agent, run one PPO update, and
    report the policy's gradients; also checks that the RND target (if any) did not move."""
    from wanderlust.algo.ppo import ppo_update
    from wanderlust.algo.storage import RolloutStorage
    from wanderlust.algo.trainer import Learner, collect_rollout, compute_advantages
    from wanderlust.envs.factory import make_vector_env

    envs = make_vector_env(config.env)
    try:
        learner = Learner(config, envs.single_observation_space, envs.single_action_space, torch.device("cpu"))
        storage = RolloutStorage(config.ppo.num_steps, config.env.num_envs, envs.single_observation_space.shape,
                                 envs.single_action_space, torch.device("cpu"))
        obs_np, _ = envs.reset(seed=config.seed)
        obs_np, _ = collect_rollout(envs, learner, storage, obs_np)
        adv_ext, adv_int, ret_ext, ret_int = compute_advantages(learner, storage, obs_np)
        target_before = _frozen_copy(learner.novelty)
        ppo_update(learner.agent, learner.optimizer, storage.ppo_batch(adv_ext, adv_int, ret_ext, ret_int),
                   config.ppo, learner.generator)
        report = _report_from_grads(learner.agent)
        novelty_checks = {"novelty": config.novelty_name}
        learner.novelty.update(storage.novelty_batch())
        if target_before is not None:
            unchanged = all(torch.equal(a, b) for a, b in zip(target_before, _frozen_copy(learner.novelty)))
            novelty_checks["novelty target network"] = (
                "unchanged by learning (gets no gradient)" if unchanged else "CHANGED: the target must stay fixed"
            )
        return report, novelty_checks
    finally:
        envs.close()


def _frozen_copy(novelty) -> list[torch.Tensor] | None:
    target = getattr(novelty, "target", None)
    return None if target is None else [p.detach().clone() for p in target.parameters()]


def _report_from_grads(agent: nn.Module) -> GradientReport:
    """Classify the gradients that a finished PPO update left in ``.grad``."""
    params = [(n, p) for n, p in agent.named_parameters() if p.requires_grad]
    report = classify_gradients(params, "not used by the PPO loss")
    if report.ok:
        report.summary = (f"all {report.total} policy parameters get finite, non-zero gradients "
                          "through log pi(a|s) and the values")
    return report
