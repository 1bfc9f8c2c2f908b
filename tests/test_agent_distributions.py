"""Action distributions: squashed-Gaussian change of variables, stability, categorical wrapper."""

from __future__ import annotations

import math

import torch
from torch.distributions import Normal, TransformedDistribution
from torch.distributions.transforms import TanhTransform

from wanderlust.agent.distributions import CategoricalActions, SquashedGaussian, tanh_log_det_jacobian


def test_log_prob_matches_torch_tanh_transformed_normal() -> None:
    torch.manual_seed(0)
    mean = torch.randn(6, 4, dtype=torch.float64)
    log_std = torch.randn(4, dtype=torch.float64) * 0.3
    u = (torch.rand(6, 4, dtype=torch.float64) - 0.5) * 4.0  # |u| < 2: away from saturation
    ours = SquashedGaussian(mean, log_std).log_prob(u)
    reference = TransformedDistribution(Normal(mean, log_std.exp()), [TanhTransform()])
    expected = reference.log_prob(torch.tanh(u)).sum(dim=-1)
    assert ours.shape == (6,)
    torch.testing.assert_close(ours, expected, rtol=1e-9, atol=1e-9)


def test_log_prob_is_a_numerical_change_of_variables() -> None:
    # One action dim: p_a(tanh(u)) = p_u(u) / (d tanh / du), derivative by central differences.
    mean, std = torch.tensor([[0.3]], dtype=torch.float64), 0.8
    for value in (-1.7, -0.2, 0.0, 0.9, 2.5):
        u = torch.tensor([[value]], dtype=torch.float64)
        step = 1e-6
        derivative = (math.tanh(value + step) - math.tanh(value - step)) / (2 * step)
        density_u = math.exp(-0.5 * ((value - 0.3) / std) ** 2) / (std * math.sqrt(2 * math.pi))
        expected = math.log(density_u / derivative)
        got = SquashedGaussian(mean, torch.tensor([math.log(std)], dtype=torch.float64)).log_prob(u)
        assert abs(float(got) - expected) < 1e-7


def test_log_prob_stays_finite_and_exact_for_saturated_u() -> None:
    mean = torch.zeros(1, 3)
    log_std = torch.zeros(3)
    u = torch.tensor([[20.0, -20.0, 50.0]])
    got = SquashedGaussian(mean, log_std).log_prob(u)
    assert torch.isfinite(got).all()
    # log(1 - tanh(u)^2) = 2 * (log 2 - log(e^u + e^-u)), in float64 via logaddexp.
    u64 = u.double()
    log_det = 2.0 * (math.log(2.0) - torch.logaddexp(u64, -u64))
    expected = (Normal(0.0, 1.0).log_prob(u64) - log_det).sum()
    torch.testing.assert_close(got.double(), expected.reshape(1), rtol=1e-6, atol=1e-3)
    # Gradients through a saturated u are finite too.
    mean = torch.zeros(1, 3, requires_grad=True)
    SquashedGaussian(mean, log_std).log_prob(u).sum().backward()
    assert torch.isfinite(mean.grad).all()


def test_tanh_log_det_jacobian_matches_naive_formula_in_safe_range() -> None:
    u = torch.linspace(-3, 3, 13, dtype=torch.float64)
    torch.testing.assert_close(tanh_log_det_jacobian(u), torch.log(1 - torch.tanh(u) ** 2))


def test_entropy_is_base_gaussian_entropy_summed() -> None:
    mean = torch.randn(5, 3)
    log_std = torch.tensor([-0.5, 0.0, 0.7])
    got = SquashedGaussian(mean, log_std).entropy()
    expected = Normal(mean, log_std.exp()).entropy().sum(-1)
    assert got.shape == (5,)
    torch.testing.assert_close(got, expected)


def test_sample_mode_and_env_action() -> None:
    torch.manual_seed(1)
    mean = torch.full((20000, 2), 0.5)
    log_std = torch.log(torch.tensor([0.1, 2.0]))
    dist = SquashedGaussian(mean, log_std)
    u = dist.sample()
    assert not u.requires_grad
    # Raw samples, not squashed: the wide dim goes far outside [-1, 1].
    assert u[:, 1].abs().max() > 2.0
    torch.testing.assert_close(u.mean(0), torch.tensor([0.5, 0.5]), atol=0.05, rtol=0)
    torch.testing.assert_close(u.std(0), torch.tensor([0.1, 2.0]), atol=0.05, rtol=0)
    env_action = dist.env_action(u)
    assert env_action.dtype == torch.float32
    assert env_action.abs().max() <= 1.0
    torch.testing.assert_close(env_action, torch.tanh(u))
    torch.testing.assert_close(dist.mode(), torch.tanh(mean))
    torch.testing.assert_close(dist.deterministic(), mean)


def test_categorical_wrapper() -> None:
    logits = torch.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]], requires_grad=True)
    dist = CategoricalActions(logits)
    action = torch.tensor([2, 1])
    expected = torch.log_softmax(logits, -1)[torch.arange(2), action]
    torch.testing.assert_close(dist.log_prob(action), expected)
    probs = torch.softmax(logits, -1)
    torch.testing.assert_close(dist.entropy(), -(probs * probs.log()).sum(-1))
    assert dist.deterministic().tolist() == [2, 0]
    assert dist.env_action(action).dtype == torch.int64
    sample = dist.sample()
    assert sample.shape == (2,) and sample.dtype == torch.int64
