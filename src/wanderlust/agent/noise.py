"""Temporally correlated exploration noise for the squashed Gaussian policy.

A Gaussian policy samples ``u = mean(s) + std * eps`` with fresh ``eps ~ N(0, I)`` every step, so a
stick policy jitters: consecutive noise cancels and the agent drifts only where its mean points.
:class:`HeldNoise` keeps each env's ``eps`` for ``hold`` steps (and redraws it when the env's
episode ends), so an untrained policy pushes the sticks the same way for ``hold`` steps, as
SB3's gSDE does with ``sde_sample_freq`` (Raffin et al. 2021, "Smooth Exploration for Robotic
Reinforcement Learning"). The mean still reacts every step, and every single action is still
distributed as ``N(mean(s), std)``, so the log-probability PPO uses is unchanged (PPO, like SB3 with
gSDE, treats the steps as if their noise were independent).

With ``hold = 1`` the noise is drawn exactly as ``SquashedGaussian.sample`` draws it: one
``torch.randn`` of shape ``[N, A]`` per step from the global generator.
"""

from __future__ import annotations

import numpy as np
import torch


def check_noise_hold(value: int) -> None:
    """ValueError unless ``value`` is an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"noise_hold must be an integer >= 1 (1: fresh noise every step), got {value!r}")


class HeldNoise:
    """Standard-normal noise ``[N, A]`` per env, redrawn every ``hold`` steps and after an episode ends.

    Call :meth:`next` once per step for the noise of that step, then :meth:`episodes_ended` with the
    step's episode ends so the next episode starts with fresh noise. Draws come from torch's global
    generator (seed it, or fork it, as for any other sampling).
    """

    def __init__(self, num_envs: int, action_dim: int, hold: int, device: torch.device | str = "cpu") -> None:
        check_noise_hold(hold)
        self.hold = hold
        self.noise = torch.zeros(num_envs, action_dim, device=device)
        self.age = torch.zeros(num_envs, dtype=torch.int64, device=device)
        """Steps since each env's noise was drawn; 0 means it is drawn at the next step."""

    def next(self) -> torch.Tensor:
        """The noise of this step ``[N, A]`` (a fresh draw for the envs whose hold is over)."""
        redraw = self.age % self.hold == 0
        if bool(redraw.any()):
            fresh = torch.randn(self.noise.shape, device=self.noise.device)
            self.noise = torch.where(redraw[:, None], fresh, self.noise)
        self.age += 1
        return self.noise

    def episodes_ended(self, ends: np.ndarray | torch.Tensor) -> None:
        """``ends [N]`` bool: these envs start a new episode at the next step, with fresh noise."""
        ends = torch.as_tensor(np.asarray(ends, dtype=bool), device=self.age.device)
        self.age[ends] = 0


def make_held_noise(hold: int, agent, num_envs: int, device: torch.device | str = "cpu") -> HeldNoise | None:
    """The held noise for ``agent``'s ``num_envs`` envs, or None where every step draws fresh noise:
    ``hold = 1``, or a policy that is not a squashed Gaussian (Discrete actions, ``action_bins``),
    whose samples have no noise to hold (as SB3 applies gSDE to continuous actions only)."""
    check_noise_hold(hold)
    if hold == 1 or agent.is_discrete or agent.action_bins:
        return None
    return HeldNoise(num_envs, agent.action_dim, hold, device)
