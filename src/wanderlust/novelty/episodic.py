"""Episodic novelty as in Never Give Up (Badia et al. 2020), without the life-long modulator.

Each env keeps the embeddings of the frames it saw this episode. A new frame is novel when its
embedding is far from its k nearest neighbours in that memory: with squared distances ``d_j``
divided by a running mean of k-NN squared distances, ``d_j <- max(d_j - xi, 0)``, kernel
``K_j = eps / (d_j + eps)``, similarity ``s = sqrt(sum_j K_j) + c`` and reward ``1 / s`` (0 when
``s > max_similarity``). The embedding network is trained with an inverse-dynamics loss (which
action led from ``x_t`` to ``x_t+1``?), so it keeps the controllable part of the frame.

A first-person game shows why that is not enough: turning the camera is controllable, so frames of
one place seen from new angles look novel and the agent can earn as much by looking around as by
exploring (``benchmarks/novelty_alignment.py`` measures it). Three options address this (the
defaults are ``temporal`` and ``landmark``):

- ``embedding_loss="temporal"``: the embedding is trained with a temporal contrastive (InfoNCE)
  loss instead: frames at most ``temporal_window`` steps apart in one env's episode are pulled
  together, other frames of the batch pushed apart. Views of one place (which the agent sees within
  a few steps of each other) end up close, so the embedding describes the place more than the view
  (in the spirit of Episodic Curiosity's reachability network, Savinov et al. 2019). Embeddings are
  L2-normalised.
- ``reward_kind="count"``: an episodic pseudo-count instead of NGU's kernel: ``n`` = memory entries
  closer than ``count_radius`` times the running mean of nearest-neighbour distances, reward
  ``1 / sqrt(1 + n)``. Revisiting a known place pays little however it is looked at, so the total
  that staying in one place can earn is bounded.
- ``reward_kind="landmark"``: Episodic Curiosity's memory of landmarks (Savinov et al. 2019) with a
  binary reward: a frame farther than ``landmark_radius`` typical one-step embedding distances from
  every landmark of the episode pays 1 and becomes a landmark; any other frame pays 0. Consecutive
  frames do not crowd the memory, so a new place pays in full, and once a place has been looked at
  all round, looking at it again pays nothing.

Shapes: ``N`` envs, ``M`` memory capacity, ``k`` neighbours, ``D`` embedding size, ``B`` batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium
import torch
from torch import nn

from wanderlust.novelty.base import NoveltyBatch, ObsSpec, newest_frame
from wanderlust.novelty.memory import PerEnvMemory, history_mask
from wanderlust.novelty.nets import (
    action_size, check_actions, flat_size, inverse_dynamics_loss, nature_conv, orthogonal_init,
)
from wanderlust.novelty.support import (
    check_obs, check_obs_spec, check_positive, check_step, cpu_copy, load_optimizer_state, load_tensor,
    minibatches, optimizer_state,
)
from wanderlust.runtime.normalize import RunningMeanStd


@dataclass
class EpisodicConfig:
    """Hyperparameters of :class:`EpisodicNovelty`. Kernel and memory values are NGU's; the embedding
    loss, reward and update epochs default to the place-oriented options, which measured better on
    the maze (docs/benchmarks.md); ``embedding_loss="inverse", reward_kind="kernel", update_epochs=1``
    is NGU's episodic module."""

    embedding_dim: int = 32
    """D: size of the controllable-state embedding."""
    capacity: int = 2000
    """M: embeddings kept per env and episode; the oldest is overwritten when full."""
    num_neighbors: int = 10
    """k: nearest neighbours used for the similarity."""
    kernel_epsilon: float = 1e-3
    """eps of the inverse kernel eps / (d + eps)."""
    cluster_distance: float = 0.008
    """xi: normalised distances below this count as the same place."""
    pseudo_count_constant: float = 1e-3
    """c: added to sqrt(sum of kernels)."""
    max_similarity: float = 8.0
    """Reward is 0 when the similarity exceeds this (the frame is thoroughly known)."""
    hidden_size: int = 128
    """Width of the inverse-dynamics head's hidden layer."""
    learning_rate: float = 5e-4
    """Adam learning rate of the embedding network and inverse head."""
    update_epochs: int = 4
    """Passes over the rollout per update()."""
    minibatch_size: int = 256
    """Transitions per gradient step."""
    embedding_loss: str = "temporal"
    """How the embedding is trained: inverse (NGU's inverse dynamics) or temporal (contrastive over time)."""
    temporal_window: int = 25
    """temporal loss: frames at most this many steps apart (same env and episode) are positives."""
    temperature: float = 0.1
    """temporal loss: InfoNCE temperature on cosine similarities."""
    reward_kind: str = "landmark"
    """kernel (NGU's k-NN inverse kernel), count (episodic pseudo-count within a radius) or landmark
    (Episodic Curiosity's landmark memory, binary reward)."""
    count_radius: float = 3.0
    """count reward: entries closer than this times the running mean nearest-neighbour distance count."""
    distance_decay: float = 0.99
    """count and landmark rewards: decay of the running mean of the distance scale (an EMA follows the
    embedding as it trains)."""
    landmark_radius: float = 3.0
    """landmark reward: a frame is a new landmark when it is farther than this many mean one-step
    embedding distances (between consecutive frames of an env) from every landmark of the episode."""


EMBEDDING_LOSSES = ("inverse", "temporal")
REWARD_KINDS = ("kernel", "count", "landmark")


def squared_distances(query: torch.Tensor, memory: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distances ``[N, M]`` from ``query [N, D]`` to every slot of ``memory [N, M, D]``,
    which holds ``min(counts[i], M)`` valid entries for env ``i``; empty slots are ``inf``."""
    distances = (memory - query[:, None]).pow(2).sum(dim=2)
    return distances.masked_fill(~history_mask(counts, memory.shape[1]), float("inf"))


def nearest_squared_distances(
    query: torch.Tensor, memory: torch.Tensor, counts: torch.Tensor, num_neighbors: int
) -> torch.Tensor:
    """Squared Euclidean distances ``[N, min(k, M)]`` from ``query [N, D]`` to its k nearest entries
    (see :func:`squared_distances`); missing neighbours (fewer valid entries than k) are ``inf``."""
    distances = squared_distances(query, memory, counts)
    return distances.topk(min(num_neighbors, memory.shape[1]), dim=1, largest=False).values


def episodic_count_reward(distances: torch.Tensor, radius: torch.Tensor) -> torch.Tensor:
    """``1 / sqrt(1 + n)`` ``[N]`` where ``n`` counts the entries of ``distances [N, M]`` (``inf`` =
    empty slot) below ``radius`` (a scalar tensor)."""
    count = (distances < radius).sum(dim=1).to(torch.float32)
    return (1.0 + count).rsqrt()


def follow_scale(scale: torch.Tensor, batch_mean: torch.Tensor, decay: float) -> torch.Tensor:
    """EMA of a distance scale: ``batch_mean`` when none was seen yet (``scale <= 0``), else
    ``decay * scale + (1 - decay) * batch_mean``."""
    return batch_mean if scale <= 0 else decay * scale + (1 - decay) * batch_mean


def landmark_reward(distances: torch.Tensor, radius: torch.Tensor) -> torch.Tensor:
    """float ``[N]``: 1 where every entry of ``distances [N, M]`` (``inf`` = empty slot) is at least
    ``radius`` (a scalar tensor), i.e. the frame is a new landmark; else 0."""
    return (distances.min(dim=1).values >= radius).to(torch.float32)


def temporal_pairs(
    episode_ends: torch.Tensor, window: int, size: int, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sample up to ``size`` positive pairs ``(t, t + d, n)`` from a rollout's ``episode_ends [T, N]``.

    ``1 <= d <= window`` and no episode ends between the two frames (``episode_ends[t .. t+d-1]`` all
    False for env ``n``: the frame produced at step ``t`` and the one produced ``d`` steps later belong
    to the same episode). Returns three int64 tensors ``[P]``, ``P <= size`` (invalid draws are dropped).
    """
    T, N = episode_ends.shape
    if T < 2:
        return (torch.zeros(0, dtype=torch.int64),) * 3
    device = episode_ends.device
    t = torch.randint(0, T - 1, (size,), generator=generator).to(device)
    n = torch.randint(0, N, (size,), generator=generator).to(device)
    span = torch.clamp(T - 1 - t, max=window)
    d = 1 + (torch.rand(size, generator=generator).to(device) * span).long().clamp(max=span - 1)
    ended = torch.cat([torch.zeros(1, N, dtype=torch.int64, device=device), episode_ends.long().cumsum(0)])
    valid = (ended[t + d, n] - ended[t, n]) == 0  # ends at steps t .. t+d-1
    return t[valid], (t + d)[valid], n[valid]


def near_in_time(first: torch.Tensor, second: torch.Tensor, env: torch.Tensor, horizon: int) -> torch.Tensor:
    """bool ``[P, P]``: pair ``i``'s anchor and pair ``j``'s positive come from the same env less than
    ``horizon`` steps apart (``i != j``). Such frames probably show the same place, so they are not
    used as negatives (they would teach the embedding to tell views apart, not places)."""
    same_env = env[:, None] == env[None, :]
    close = (first[:, None] - second[None, :]).abs() < horizon
    return same_env & close & ~torch.eye(first.numel(), dtype=torch.bool, device=first.device)


def info_nce(
    anchor: torch.Tensor, positive: torch.Tensor, temperature: float, ignore: torch.Tensor | None = None
) -> torch.Tensor:
    """InfoNCE loss (scalar) of L2-normalised ``anchor [P, D]`` against ``positive [P, D]``: row ``i``'s
    positive is ``positive[i]``, the other rows are its negatives except where ``ignore [P, P]`` (bool,
    diagonal False) is True."""
    logits = anchor @ positive.T / temperature
    if ignore is not None:
        logits = logits.masked_fill(ignore, float("-inf"))
    return nn.functional.cross_entropy(logits, torch.arange(anchor.shape[0], device=anchor.device))


def episodic_novelty(
    squared_distances: torch.Tensor, distance_mean: torch.Tensor, config: EpisodicConfig
) -> torch.Tensor:
    """NGU's episodic reward ``[N]`` from k-NN squared distances ``[N, k]`` (``inf`` = no neighbour)."""
    distances = squared_distances / distance_mean.clamp_min(1e-8)
    distances = (distances - config.cluster_distance).clamp_min(0.0)
    kernel = config.kernel_epsilon / (distances + config.kernel_epsilon)  # inf -> 0
    similarity = kernel.sum(dim=1).sqrt() + config.pseudo_count_constant
    return torch.where(similarity > config.max_similarity, torch.zeros_like(similarity), 1.0 / similarity)


class EpisodicNovelty:
    """Per-env episodic memory of frame embeddings; reward from k-NN similarity, a pseudo-count or new
    landmarks (``reward_kind``)."""

    name = "episodic"
    sequential = True

    def __init__(
        self, obs_spec: ObsSpec, action_space: gymnasium.spaces.Space, num_envs: int, config: EpisodicConfig,
        device: torch.device | str,
    ) -> None:
        check_obs_spec(obs_spec)
        for field in ("embedding_dim", "capacity", "num_neighbors", "kernel_epsilon", "max_similarity",
                      "hidden_size", "learning_rate", "update_epochs", "minibatch_size", "temporal_window",
                      "temperature", "count_radius", "landmark_radius"):
            check_positive(getattr(config, field), f"episodic.{field}")
        if config.embedding_loss not in EMBEDDING_LOSSES:
            raise ValueError(f"episodic.embedding_loss must be one of {', '.join(EMBEDDING_LOSSES)}, "
                             f"got {config.embedding_loss!r}")
        if config.reward_kind not in REWARD_KINDS:
            raise ValueError(f"episodic.reward_kind must be one of {', '.join(REWARD_KINDS)}, got {config.reward_kind!r}")
        if not 0.0 < config.distance_decay < 1.0:
            raise ValueError(f"episodic.distance_decay must be in (0, 1), got {config.distance_decay!r}")
        self.episode_memory = PerEnvMemory(num_envs, config.capacity, (config.embedding_dim,), device)
        """Each env's embeddings ``[N, M, D]`` of this episode."""
        self.obs_spec = obs_spec
        self.action_space = action_space
        self.num_envs = num_envs
        self.config = config
        self.device = torch.device(device)
        _, height, width = obs_spec.shape
        frame_shape = (obs_spec.channels_per_frame, height, width)
        trunk = nature_conv(obs_spec.channels_per_frame, nn.ReLU)
        trunk_size = flat_size(trunk, frame_shape, "episodic")
        self.embedding = nn.Sequential(trunk, nn.Linear(trunk_size, config.embedding_dim))
        self.inverse_model = nn.Sequential(
            nn.Linear(2 * config.embedding_dim, config.hidden_size), nn.ReLU(),
            nn.Linear(config.hidden_size, action_size(action_space)),
        )
        self.networks = nn.ModuleDict({"embedding": self.embedding, "inverse_model": self.inverse_model})
        orthogonal_init(self.networks)
        self.networks.to(self.device)
        self.optimizer = torch.optim.Adam(self.networks.parameters(), lr=config.learning_rate)
        self.distance_stats = RunningMeanStd(())
        """Cumulative mean of all k-NN squared distances seen by reward() (normalises distances); updated
        with each call's distances before they are normalised."""
        self.nearest_mean = torch.zeros((), dtype=torch.float64)
        """count reward: EMA of nearest-neighbour distances (0 = no distance seen yet)."""
        self.step_mean = torch.zeros((), dtype=torch.float64)
        """landmark reward: EMA of the distance between consecutive embeddings of an env (0 = none seen)."""
        self.previous = torch.zeros((num_envs, config.embedding_dim), device=self.device)
        """landmark reward: [N, D] each env's embedding of its latest frame."""

    @property
    def memory(self) -> torch.Tensor:
        """[N, M, D] ring buffer of this episode's embeddings; env i writes slot counts[i] % M next."""
        return self.episode_memory.entries

    @property
    def counts(self) -> torch.Tensor:
        """[N] embeddings written since each env's episode began (0 = empty)."""
        return self.episode_memory.counts

    def embed(self, obs: torch.Tensor) -> torch.Tensor:
        """uint8 ``[B, C, H, W]`` -> embedding ``[B, D]`` of the newest frame (scaled to [0, 1])."""
        frame = newest_frame(obs.to(self.device), self.obs_spec.channels_per_frame)
        embedding = self.embedding(frame.to(torch.float32) / 255.0)
        if self.config.embedding_loss == "temporal":
            embedding = nn.functional.normalize(embedding, dim=1)
        return embedding

    def reward(
        self, obs: torch.Tensor, next_obs: torch.Tensor, actions: torch.Tensor, episode_ends: torch.Tensor
    ) -> torch.Tensor:
        """``[N]`` episodic novelty of each env's ``next_obs``; then remember it (forget at episode ends)."""
        ends = check_step(obs, next_obs, episode_ends, self.obs_spec, self.num_envs, self.device)
        memory = self.episode_memory
        with torch.no_grad():
            new_embedding = self.embed(next_obs)  # [N, D]
            starting = memory.counts == 0
            memory.fill_empty(obs, self.embed)  # first step of an episode: compare against the start frame
            if self.config.reward_kind == "landmark":
                self.previous[starting] = memory.entries[starting, 0]
                novelty = self._landmark_reward(new_embedding)
                memory.push(new_embedding, where=novelty > 0)
            else:
                novelty = self._count_reward(new_embedding) if self.config.reward_kind == "count" \
                    else self._kernel_reward(new_embedding)
                memory.push(new_embedding)
            memory.clear(ends)
        return novelty

    def _kernel_reward(self, new_embedding: torch.Tensor) -> torch.Tensor:
        """``[N]`` NGU kernel reward of ``new_embedding [N, D]``; updates the mean k-NN distance first."""
        memory = self.episode_memory
        squared = nearest_squared_distances(new_embedding, memory.entries, memory.counts, self.config.num_neighbors)
        finite = squared[torch.isfinite(squared)].to(torch.float64).cpu()
        if finite.numel() > 0:
            self.distance_stats.update(finite)
        distance_mean = self.distance_stats.mean.to(device=self.device, dtype=torch.float32)
        return episodic_novelty(squared, distance_mean, self.config)

    def _count_reward(self, new_embedding: torch.Tensor) -> torch.Tensor:
        """``[N]`` pseudo-count reward of ``new_embedding [N, D]`` against each env's memory; updates
        the running mean of nearest-neighbour distances first."""
        memory = self.episode_memory
        distances = squared_distances(new_embedding, memory.entries, memory.counts).sqrt()  # [N, M]
        nearest = distances.min(dim=1).values
        nearest = nearest[torch.isfinite(nearest)]
        if nearest.numel() > 0:
            self.nearest_mean = follow_scale(self.nearest_mean, nearest.to(torch.float64).mean().cpu(),
                                             self.config.distance_decay)
        radius = (self.config.count_radius * self.nearest_mean).to(device=self.device, dtype=torch.float32)
        return episodic_count_reward(distances, radius)

    def _landmark_reward(self, new_embedding: torch.Tensor) -> torch.Tensor:
        """``[N]`` landmark reward of ``new_embedding [N, D]`` against each env's landmarks; updates the
        mean one-step distance first (from each env's previous embedding) and remembers the new one."""
        steps = (new_embedding - self.previous).norm(dim=1)
        self.step_mean = follow_scale(self.step_mean, steps.to(torch.float64).mean().cpu(), self.config.distance_decay)
        self.previous = new_embedding.clone()
        memory = self.episode_memory
        distances = squared_distances(new_embedding, memory.entries, memory.counts).sqrt()  # [N, M]
        radius = (self.config.landmark_radius * self.step_mean).to(device=self.device, dtype=torch.float32)
        return landmark_reward(distances, radius)

    def update(self, batch: NoveltyBatch) -> dict[str, float]:
        """Train the embedding on the rollout: inverse dynamics, or the temporal contrastive loss."""
        if self.config.embedding_loss == "temporal":
            return self._temporal_update(batch)
        check_obs(batch.obs, self.obs_spec, "batch.obs")
        check_obs(batch.next_obs, self.obs_spec, "batch.next_obs", batch.obs.shape[0])
        check_actions(batch.actions, self.action_space, batch.obs.shape[0])
        config = self.config
        obs, next_obs, actions = (x.to(self.device) for x in (batch.obs, batch.next_obs, batch.actions))
        losses = []
        for _ in range(config.update_epochs):
            for index in minibatches(obs.shape[0], config.minibatch_size, self.device):
                loss = self.inverse_loss(obs[index], next_obs[index], actions[index]).mean()
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                losses.append(loss.detach())
        return {"novelty/episodic_inverse_loss": float(torch.stack(losses).mean())}

    def _temporal_update(self, batch: NoveltyBatch) -> dict[str, float]:
        check_obs(batch.next_obs, self.obs_spec, "batch.next_obs")
        if batch.episode_ends is None or batch.num_envs is None or batch.next_obs.shape[0] % batch.num_envs:
            raise ValueError("episodic.embedding_loss='temporal' needs a time-ordered rollout: pass a NoveltyBatch "
                             "with episode_ends and num_envs (RolloutStorage.novelty_batch does)")
        config, N = self.config, batch.num_envs
        T = batch.next_obs.shape[0] // N
        frames = batch.next_obs.to(self.device).reshape(T, N, *batch.next_obs.shape[1:])
        ends = batch.episode_ends.to(self.device).reshape(T, N)
        losses = []
        steps = config.update_epochs * max(1, (T * N) // config.minibatch_size)
        for _ in range(steps):
            first, second, env = temporal_pairs(ends, config.temporal_window, config.minibatch_size)
            if first.numel() < 2:
                continue
            embedded = self.embed(torch.cat([frames[first, env], frames[second, env]]))
            loss = info_nce(*embedded.split(first.numel()), config.temperature,
                            near_in_time(first, second, env, 2 * config.temporal_window))
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            losses.append(loss.detach())
        metrics = {}
        if config.reward_kind == "count":
            metrics["novelty/episodic_nearest_mean"] = float(self.nearest_mean)
        elif config.reward_kind == "landmark":
            metrics["novelty/episodic_step_mean"] = float(self.step_mean)
        if losses:
            metrics["novelty/episodic_temporal_loss"] = float(torch.stack(losses).mean())
        return metrics

    def inverse_loss(self, obs: torch.Tensor, next_obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Per-sample inverse-dynamics loss ``[B]`` of predicting ``actions`` from both embeddings."""
        embedding, next_embedding = self.embed(torch.cat([obs, next_obs])).split(obs.shape[0])
        output = self.inverse_model(torch.cat([embedding, next_embedding], dim=1))
        return inverse_dynamics_loss(output, actions, self.action_space)

    def state_dict(self) -> dict:
        return {
            "networks": cpu_copy(self.networks.state_dict()),
            "optimizer": optimizer_state(self.optimizer),
            "memory": self.episode_memory.state_dict(),
            "distance_stats": self.distance_stats.state_dict(),
            "nearest_mean": self.nearest_mean.clone(),
            "step_mean": self.step_mean.clone(),
            "previous": cpu_copy(self.previous),
        }

    def load_state_dict(self, state: dict) -> None:
        self.networks.load_state_dict(state["networks"])
        load_optimizer_state(self.optimizer, state["optimizer"])
        self.episode_memory.load_state_dict(state["memory"])
        self.distance_stats.load_state_dict(state["distance_stats"])
        self.nearest_mean = torch.as_tensor(state.get("nearest_mean", 0.0), dtype=torch.float64).clone()
        self.step_mean = torch.as_tensor(state.get("step_mean", 0.0), dtype=torch.float64).clone()
        if "previous" in state:
            self.previous = load_tensor(state["previous"], self.previous)
