"""PPO with two value heads (extrinsic and intrinsic), as in PPO-RND.

The math lives in small pure functions; :func:`ppo_update` runs the epochs of shuffled minibatches.
The only path from the loss to the policy weights is ``log pi(a | s)`` inside the probability
ratio (DESIGN.md section 1): rewards, novelty and advantages are constants here.

Shapes: ``T`` steps, ``N`` envs, ``B = T * N`` flattened transitions, ``M`` a minibatch.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
from torch import nn

from wanderlust.agent.actor_critic import ActorCritic


@dataclass
class PPOConfig:
    """PPO hyper-parameters (defaults: CleanRL's ppo_atari / ppo_rnd_envpool)."""

    learning_rate: float = 2.5e-4
    """Adam learning rate at the start of training."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to 0 over training (see :func:`learning_rate_at`)."""
    num_steps: int = 128
    """Rollout length T: env steps per env between updates."""
    gamma: float = 0.99
    """Discount of the extrinsic (game) reward."""
    gamma_int: float = 0.99
    """Discount of the intrinsic (novelty) reward."""
    gae_lambda: float = 0.95
    """GAE lambda for both reward streams."""
    num_minibatches: int = 4
    """Minibatches per epoch; the minibatch size is T * N / num_minibatches."""
    update_epochs: int = 4
    """Passes over the rollout per update."""
    clip_coef: float = 0.1
    """PPO ratio clip range epsilon (also the value clip range when clip_vloss)."""
    clip_vloss: bool = True
    """Clip the value change around the rollout's values, as in the PPO paper's code."""
    ent_coef: float = 0.01
    """Weight of the entropy bonus."""
    vf_coef: float = 0.5
    """Weight of the (extrinsic + intrinsic) value loss."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""
    ext_coef: float = 2.0
    """Weight of the extrinsic advantage in the combined advantage."""
    int_coef: float = 1.0
    """Weight of the intrinsic advantage in the combined advantage."""
    norm_adv: bool = True
    """Normalize the combined advantage per minibatch."""
    target_kl: float | None = None
    """Stop the update early once a minibatch's approx KL exceeds this (None: never)."""

    def validate(self) -> None:
        """Raise ValueError naming the first nonsensical field."""
        positive_ints = ("num_steps", "num_minibatches", "update_epochs")
        for name in positive_ints:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ppo.{name} must be a positive integer, got {value!r}")
        for name in ("gamma", "gamma_int"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"ppo.{name} must be in (0, 1], got {getattr(self, name)!r}")
        if not 0.0 <= self.gae_lambda <= 1.0:
            raise ValueError(f"ppo.gae_lambda must be in [0, 1], got {self.gae_lambda!r}")
        for name in ("learning_rate", "clip_coef", "max_grad_norm"):
            if not getattr(self, name) > 0.0:
                raise ValueError(f"ppo.{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("ent_coef", "vf_coef", "ext_coef", "int_coef"):
            if not getattr(self, name) >= 0.0:
                raise ValueError(f"ppo.{name} must be >= 0, got {getattr(self, name)!r}")
        if self.ext_coef == 0.0 and self.int_coef == 0.0:
            raise ValueError("ppo.ext_coef and ppo.int_coef are both 0: the policy would have nothing to learn from")
        if self.target_kl is not None and not self.target_kl > 0.0:
            raise ValueError(f"ppo.target_kl must be > 0 or None, got {self.target_kl!r}")


def learning_rate_at(config: PPOConfig, iteration: int, num_iterations: int) -> float:
    """Learning rate for update ``iteration`` (0-based) of ``num_iterations``: linear decay when ``anneal_lr``.

    Iteration 0 uses the full rate and the last one ``learning_rate / num_iterations`` (as CleanRL).
    """
    if not config.anneal_lr:
        return config.learning_rate
    if num_iterations < 1 or not 0 <= iteration < num_iterations:
        raise ValueError(f"learning_rate_at needs 0 <= iteration < num_iterations, got {iteration} of {num_iterations}")
    return config.learning_rate * (1.0 - iteration / num_iterations)


def clipped_surrogate_loss(
    new_log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor, clip_coef: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO's clipped policy loss over ``[M]`` samples.

    ``ratio = exp(new - old)``; ``loss = mean(max(-A * ratio, -A * clip(ratio, 1 - eps, 1 + eps)))``.
    Returns ``(loss, approx_kl, clip_fraction)``; the last two are detached scalars:
    ``approx_kl = mean((ratio - 1) - log ratio)`` (Schulman's low-variance k3 estimator) and
    ``clip_fraction`` the share of samples with ``|ratio - 1| > eps``.
    """
    log_ratio = new_log_prob - old_log_prob
    ratio = log_ratio.exp()
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip_coef, 1.0 + clip_coef)
    loss = torch.max(unclipped, clipped).mean()
    with torch.no_grad():
        approx_kl = ((ratio - 1.0) - log_ratio).mean()
        clip_fraction = ((ratio - 1.0).abs() > clip_coef).to(ratio.dtype).mean()
    return loss, approx_kl, clip_fraction


def value_loss(
    new_values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip_coef: float | None
) -> torch.Tensor:
    """``0.5 * mean((V - R)^2)``, or with ``clip_coef`` the pessimistic clipped form (CleanRL):

    ``V_clip = V_old + clip(V - V_old, -eps, eps)``; ``0.5 * mean(max((V - R)^2, (V_clip - R)^2))``.
    All inputs ``[M]``.
    """
    unclipped = (new_values - returns).pow(2)
    if clip_coef is None:
        return 0.5 * unclipped.mean()
    clipped_values = old_values + torch.clamp(new_values - old_values, -clip_coef, clip_coef)
    clipped = (clipped_values - returns).pow(2)
    return 0.5 * torch.max(unclipped, clipped).mean()


def normalize_advantages(advantages: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``(A - mean) / (std + eps)`` over ``[M]``; a single sample becomes 0 (its std is undefined)."""
    if advantages.numel() < 2:
        return advantages - advantages.mean()
    return (advantages - advantages.mean()) / (advantages.std() + eps)


def combine_advantages(
    advantages_ext: torch.Tensor, advantages_int: torch.Tensor, ext_coef: float, int_coef: float
) -> torch.Tensor:
    """``ext_coef * A_ext + int_coef * A_int`` (RND's weighted sum of the two streams)."""
    return ext_coef * advantages_ext + int_coef * advantages_int


def explained_variance(y_pred: torch.Tensor, y_true: torch.Tensor) -> float:
    """``1 - Var(y_true - y_pred) / Var(y_true)``: 1 is perfect, 0 no better than the mean; NaN if Var(y_true) = 0."""
    var_true = y_true.to(torch.float64).var(unbiased=False)
    if var_true.item() == 0.0:
        return float("nan")
    residual = (y_true - y_pred).to(torch.float64).var(unbiased=False)
    return float(1.0 - residual / var_true)


@dataclass
class PPOBatch:
    """A rollout flattened to ``B = T * N`` transitions, all on the agent's device."""

    obs: torch.Tensor
    """[B, C, H, W] uint8."""
    actions: torch.Tensor
    """[B, A] float raw pre-tanh ``u`` or bin indices (Box) or [B] int64 (Discrete): ``ActOutput.action``."""
    log_probs: torch.Tensor
    """[B] behaviour log pi(a|s) at collection time."""
    advantages_ext: torch.Tensor
    """[B] extrinsic GAE advantages."""
    advantages_int: torch.Tensor
    """[B] intrinsic GAE advantages."""
    returns_ext: torch.Tensor
    """[B] extrinsic value targets."""
    returns_int: torch.Tensor
    """[B] intrinsic value targets."""
    values_ext: torch.Tensor
    """[B] extrinsic values at collection time."""
    values_int: torch.Tensor
    """[B] intrinsic values at collection time."""

    def __post_init__(self) -> None:
        size = self.obs.shape[0]
        for field in fields(self):
            tensor = getattr(self, field.name)
            if tensor.shape[0] != size:
                raise ValueError(
                    f"PPOBatch.{field.name} has {tensor.shape[0]} rows but obs has {size}; flatten every field to T * N"
                )
            if field.name not in ("obs", "actions") and tensor.dim() != 1:
                raise ValueError(f"PPOBatch.{field.name} must be [B], got shape {list(tensor.shape)}")

    def __len__(self) -> int:
        return int(self.obs.shape[0])


def ppo_update(
    agent: ActorCritic,
    optimizer: torch.optim.Optimizer,
    batch: PPOBatch,
    config: PPOConfig,
    generator: torch.Generator,
) -> dict[str, float]:
    """Run ``update_epochs`` passes of ``num_minibatches`` shuffled minibatches over ``batch``.

    Per minibatch: combine (then normalize) the advantages, ``loss = pg_loss - ent_coef * entropy
    + vf_coef * (v_loss_ext + v_loss_int)``, backward, clip the global grad norm, step. Stops early
    once a minibatch's approx KL exceeds ``target_kl``. The shuffles come from ``generator`` only,
    so the same generator state gives the same update. The last minibatch's gradients stay in
    ``.grad``. Both value losses use the same clipping rule (``clip_vloss``).

    Returns CleanRL-style metrics averaged over the minibatches run (``losses/grad_norm`` is the
    norm before clipping), and the explained variance of the rollout's values for both streams.
    """
    config.validate()
    batch_size = len(batch)
    if batch_size < config.num_minibatches:
        raise ValueError(
            f"ppo_update got {batch_size} transitions for {config.num_minibatches} minibatches; "
            "collect more steps or lower ppo.num_minibatches"
        )
    value_clip = config.clip_coef if config.clip_vloss else None
    sums = {"policy_loss": 0.0, "value_loss_ext": 0.0, "value_loss_int": 0.0, "entropy": 0.0,
            "approx_kl": 0.0, "clipfrac": 0.0, "grad_norm": 0.0}
    num_minibatches_run = 0
    stop = False
    for _ in range(config.update_epochs):
        permutation = torch.randperm(batch_size, generator=generator, device=generator.device)
        for index in torch.tensor_split(permutation.to(batch.obs.device), config.num_minibatches):
            evaluation = agent.evaluate(batch.obs[index], batch.actions[index])
            advantages = combine_advantages(
                batch.advantages_ext[index], batch.advantages_int[index], config.ext_coef, config.int_coef
            )
            if config.norm_adv:
                advantages = normalize_advantages(advantages)
            pg_loss, approx_kl, clip_fraction = clipped_surrogate_loss(
                evaluation.log_prob, batch.log_probs[index], advantages, config.clip_coef
            )
            v_loss_ext = value_loss(evaluation.value_ext, batch.values_ext[index], batch.returns_ext[index], value_clip)
            v_loss_int = value_loss(evaluation.value_int, batch.values_int[index], batch.returns_int[index], value_clip)
            entropy = evaluation.entropy.mean()
            loss = pg_loss - config.ent_coef * entropy + config.vf_coef * (v_loss_ext + v_loss_int)

            optimizer.zero_grad()
            loss.backward()
            grad_norm = nn.utils.clip_grad_norm_(agent.parameters(), config.max_grad_norm)
            optimizer.step()

            for name, value in (("policy_loss", pg_loss), ("value_loss_ext", v_loss_ext),
                                ("value_loss_int", v_loss_int), ("entropy", entropy), ("approx_kl", approx_kl),
                                ("clipfrac", clip_fraction), ("grad_norm", grad_norm)):
                sums[name] += float(value.detach())
            num_minibatches_run += 1
            if config.target_kl is not None and float(approx_kl) > config.target_kl:
                stop = True
                break
        if stop:
            break

    metrics = {f"losses/{name}": total / num_minibatches_run for name, total in sums.items()}
    metrics["losses/explained_variance_ext"] = explained_variance(batch.values_ext, batch.returns_ext)
    metrics["losses/explained_variance_int"] = explained_variance(batch.values_int, batch.returns_int)
    metrics["losses/minibatch_updates"] = float(num_minibatches_run)
    return metrics
