"""The original agent's mistake, reproduced on purpose, and what the doctor says about it."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from wanderlust import doctor


def _seed_model() -> nn.Module:
    """The original user's network shape (conv 16/32/64 + pooling, dense 128, 4 stick outputs), small."""
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 128), nn.Linear(128, 4),
    )


def _frames(count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (16, 16, 3), dtype=np.uint8) for _ in range(count)]


def test_the_original_loss_reaches_no_weight_and_the_doctor_says_why():
    model = _seed_model()
    frames = _frames(5)
    loss = doctor.original_agent_loss(model, frames[-1], frames[:-1])
    assert torch.isfinite(loss) and not loss.requires_grad
    report = doctor.gradient_report(model.named_parameters(), loss)
    assert not report.ok
    assert set(report.problems) == {name for name, _ in model.named_parameters()}
    assert "no gradient reaches any of the 8 parameters" in report.summary
    assert "log pi(a|s)" in report.summary
    assert all(p.grad is None for p in model.parameters())


def test_the_offered_fixes_only_hide_it_gradients_stay_zero():
    """Watching the frame and asking for zero gradients (the 'fix' that was offered) gives a loss
    that backpropagates, but every weight's gradient is exactly zero; the doctor says so."""
    model = _seed_model()
    frames = _frames(4)
    sticks = model(torch.from_numpy(frames[-1]).float().permute(2, 0, 1).unsqueeze(0))
    frame = torch.from_numpy(frames[-1].astype(np.float32))
    novelty = (frame - torch.from_numpy(np.stack(frames[:-1]).astype(np.float32))).abs().mean()
    loss = (1.0 - novelty / 255.0) + 0.0 * sticks.sum()  # connected on paper, constant in fact
    report = doctor.gradient_report(model.named_parameters(), loss)
    assert len(report.problems) == 8
    assert all("exactly zero" in why for why in report.problems.values())


def test_a_policy_gradient_loss_reaches_every_weight():
    model = _seed_model()
    obs = torch.from_numpy(np.stack(_frames(8))).float().permute(0, 3, 1, 2)
    mean = model(obs)
    dist = torch.distributions.Normal(mean, 1.0)
    actions = dist.sample()
    novelty_reward = torch.rand(8)  # a reward: a constant, as it must be
    loss = -(dist.log_prob(actions).sum(-1) * (novelty_reward - novelty_reward.mean())).mean()
    report = doctor.gradient_report(model.named_parameters(), loss)
    assert report.ok, report.problems
    assert report.summary == "all 8 parameters get finite, non-zero gradients"


def test_unused_and_nan_parameters_are_named():
    used, unused = nn.Linear(3, 1), nn.Linear(3, 1)
    params = [("used.weight", used.weight), ("used.bias", used.bias), ("unused.weight", unused.weight)]
    loss = used(torch.ones(2, 3)).sum() * float("nan")
    report = doctor.gradient_report(params, loss)
    assert report.problems["unused.weight"].startswith("not used by the loss")
    assert "NaN" in report.problems["used.weight"]
