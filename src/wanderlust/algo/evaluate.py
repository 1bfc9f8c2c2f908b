"""Run a trained policy: load it from a run folder, play seeded episodes, optionally record video."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from wanderlust.agent.actor_critic import ActorCritic, build_agent
from wanderlust.agent.noise import make_held_noise
from wanderlust.envs.factory import make_env
from wanderlust.runtime.checkpoint import load_checkpoint
from wanderlust.runtime.config import EnvConfig, TrainConfig
from wanderlust.runtime.rundir import load_config


@dataclass
class EpisodeResult:
    steps: int
    episode_return: float
    coverage: float | None
    """Fraction of maze cells visited (maze envs only)."""


@dataclass
class EvalResult:
    episodes: list[EpisodeResult] = field(default_factory=list)

    @property
    def mean_return(self) -> float:
        return float(np.mean([e.episode_return for e in self.episodes]))

    @property
    def mean_coverage(self) -> float | None:
        values = [e.coverage for e in self.episodes if e.coverage is not None]
        return float(np.mean(values)) if values else None


def load_policy(run_dir: Path, device: str = "cpu") -> tuple[TrainConfig, ActorCritic]:
    """The config and agent weights of the latest valid checkpoint in ``run_dir``."""
    config = TrainConfig.from_dict(load_config(run_dir))
    state = load_checkpoint(run_dir / "checkpoints")
    env = make_env(config.env)
    try:
        agent = build_agent(config, env.observation_space.shape, env.action_space)
    finally:
        env.close()
    agent.load_state_dict(state["agent"])
    return config, agent.to(device).eval()


class PolicyActor:
    """Acts for one env with a trained agent: one observation ``[C, H, W]`` -> one env action.

    Samples the policy as training did, including held exploration noise when ``noise_hold > 1``
    (:mod:`wanderlust.agent.noise`); greedy (the Gaussian mean or argmax) when ``deterministic``.
    Call :meth:`start_episode` after each reset so a new episode starts with fresh noise.
    """

    def __init__(self, agent: ActorCritic, deterministic: bool = False, noise_hold: int = 1) -> None:
        self.agent = agent
        self.deterministic = deterministic
        self.device = next(agent.parameters()).device
        self.noise = None if deterministic else make_held_noise(noise_hold, agent, 1, self.device)

    def start_episode(self) -> None:
        """A new episode begins: the held noise is redrawn at the next step."""
        if self.noise is not None:
            self.noise.episodes_ended(np.ones(1, dtype=bool))

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        noise = None if self.noise is None else self.noise.next()
        out = self.agent.act(torch.from_numpy(obs).unsqueeze(0).to(self.device), deterministic=self.deterministic,
                             noise=noise)
        return out.env_action[0].cpu().numpy()


def policy_action(agent: ActorCritic, deterministic: bool = False, noise_hold: int = 1) -> PolicyActor:
    """The act callable of ``agent`` (sampled unless deterministic; ``noise_hold`` as in training)."""
    return PolicyActor(agent, deterministic, noise_hold)


def start_episode(act: Callable[[np.ndarray], object]) -> None:
    """Tell an act callable that a new episode begins (a :class:`PolicyActor` redraws its held noise);
    plain functions need no telling."""
    hook = getattr(act, "start_episode", None)
    if hook is not None:
        hook()


def play_episodes(
    env_config: EnvConfig, act: Callable[[np.ndarray], object], episodes: int, seed: int,
    video_path: Path | None = None,
) -> list[tuple[int, float, dict]]:
    """``(steps, return, last info)`` of ``episodes`` episodes with seeds ``seed, seed + 1, ...``,
    actions from ``act`` (any policy; told of each new episode by :func:`start_episode`); torch
    sampling is seeded with ``seed`` without touching the caller's RNG. The first episode is
    recorded to ``video_path`` (mp4, Gymnasium's RecordVideo)."""
    if episodes <= 0:
        raise ValueError(f"episodes must be positive, got {episodes}")
    env = make_env(env_config, render_mode="rgb_array" if video_path else None)
    video_dir = None
    if video_path is not None:
        from gymnasium.wrappers import RecordVideo

        video_dir = Path(tempfile.mkdtemp(prefix="wanderlust-video-")) / "episodes"
        env = RecordVideo(env, str(video_dir), episode_trigger=lambda index: index == 0, name_prefix="episode",
                          disable_logger=True)
    played = []
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        try:
            for episode in range(episodes):
                obs, info = env.reset(seed=seed + episode)
                start_episode(act)
                total, steps, done = 0.0, 0, False
                while not done:
                    obs, reward, terminated, truncated, info = env.step(act(obs))
                    total += float(reward)
                    steps += 1
                    done = terminated or truncated
                played.append((steps, total, info))
        finally:
            env.close()
    if video_path is not None and video_dir is not None:
        recorded = sorted(video_dir.glob("*.mp4"))
        if not recorded:
            raise RuntimeError(f"no video was written in {video_dir}")
        video_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(recorded[0]), video_path)
        shutil.rmtree(video_dir.parent, ignore_errors=True)
    return played


def run_episodes(
    config: TrainConfig, agent: ActorCritic, episodes: int, seed: int, deterministic: bool = False,
    video_path: Path | None = None,
) -> EvalResult:
    """Play ``agent`` for ``episodes`` seeded episodes (see :func:`play_episodes`)."""
    act = policy_action(agent, deterministic, config.noise_hold)
    played = play_episodes(config.env, act, episodes, seed, video_path)
    return EvalResult([
        EpisodeResult(steps, total, float(info["coverage"]) if "coverage" in info else None)
        for steps, total, info in played
    ])
