"""Action distributions: squashed-Gaussian change of variables, stability, categorical and binned wrappers."""

from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import Normal, TransformedDistribution
from torch.distributions.transforms import TanhTransform

from wanderlust.agent.distributions import (
    BinnedActions,
    CategoricalActions,
    SquashedGaussian,
    bin_values,
    tanh_log_det_jacobian,
)


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


def test_entropy_is_the_squashed_actions_entropy_by_monte_carlo() -> None:
    """H(tanh(u)) = H(u) + E[log(1 - tanh(u)^2)], the expectation checked against 2M samples."""
    mean = torch.tensor([[0.0, 1.5, -3.0]], dtype=torch.float64)
    log_std = torch.tensor([0.0, -0.5, 0.7], dtype=torch.float64)
    got = SquashedGaussian(mean, log_std).entropy()
    gen = torch.Generator().manual_seed(0)
    u = mean + log_std.exp() * torch.randn(2_000_000, 3, generator=gen, dtype=torch.float64)
    expected = Normal(mean, log_std.exp()).entropy().sum(-1) + torch.log(1 - torch.tanh(u) ** 2).mean(0).sum()
    assert got.shape == (1,)
    assert abs(float(got) - float(expected)) < 5e-3


def test_entropy_falls_as_the_mean_saturates_the_sticks_and_its_gradient_pulls_back() -> None:
    log_std = torch.zeros(1)
    entropies = [float(SquashedGaussian(torch.full((1, 1), m), log_std).entropy()) for m in (0.0, 1.0, 2.0, 4.0)]
    assert entropies == sorted(entropies, reverse=True) and entropies[0] - entropies[-1] > 3.0
    mean = torch.full((1, 1), 2.0, requires_grad=True)
    SquashedGaussian(mean, log_std).entropy().sum().backward()
    assert float(mean.grad) < 0  # a bonus on it moves the mean back towards 0


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


def test_bin_values_are_evenly_spaced_with_exact_ends_and_centre() -> None:
    assert bin_values(5).tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]
    assert bin_values(2).tolist() == [-1.0, 1.0]
    assert float(bin_values(11)[5]) == 0.0


def test_binned_log_prob_and_entropy_by_hand() -> None:
    # One sample, two axes of three bins: log pi = log p_axis0(bin 2) + log p_axis1(bin 0).
    logits = torch.tensor([[[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]]], requires_grad=True)
    dist = BinnedActions(logits)
    bins = torch.tensor([[2.0, 0.0]])
    p0 = [math.exp(v) / (1 + math.e + math.e**2) for v in (0.0, 1.0, 2.0)]
    p1 = [math.exp(v) / (math.e**3 + 2) for v in (3.0, 0.0, 0.0)]
    expected = math.log(p0[2]) + math.log(p1[0])
    assert abs(float(dist.log_prob(bins).detach()) - expected) < 1e-5
    entropy = -sum(p * math.log(p) for p in p0) - sum(p * math.log(p) for p in p1)
    assert abs(float(dist.entropy().detach()) - entropy) < 1e-5
    dist.log_prob(bins).sum().backward()
    assert torch.isfinite(logits.grad).all() and logits.grad.abs().sum() > 0
    # Greedy: bin 2 of axis 0 (value 1.0), bin 0 of axis 1 (value -1.0).
    assert dist.deterministic().tolist() == [[2.0, 0.0]]
    assert dist.mode().tolist() == [[1.0, -1.0]]


def test_binned_samples_follow_the_probabilities_and_map_to_values() -> None:
    torch.manual_seed(0)
    logits = torch.log(torch.tensor([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0001]])).expand(20000, 2, 3)
    dist = BinnedActions(logits)
    bins = dist.sample()
    assert bins.shape == (20000, 2) and bins.dtype == torch.float32 and not bins.requires_grad
    frequencies = torch.stack([(bins[:, 0] == k).float().mean() for k in range(3)])
    torch.testing.assert_close(frequencies, torch.tensor([0.1, 0.2, 0.7]), atol=0.02, rtol=0)
    env_action = dist.env_action(bins)
    assert env_action.dtype == torch.float32
    assert set(env_action.unique().tolist()) <= {-1.0, 0.0, 1.0}
    torch.testing.assert_close(env_action, bins - 1.0)  # three bins: index 0, 1, 2 -> -1, 0, 1


def test_binned_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError, match=r"\[B, A, K\]"):
        BinnedActions(torch.zeros(3, 4))
    with pytest.raises(ValueError, match="K >= 2"):
        BinnedActions(torch.zeros(3, 4, 1))
    with pytest.raises(ValueError, match="bin indices"):
        BinnedActions(torch.zeros(3, 4, 5)).log_prob(torch.zeros(3))
