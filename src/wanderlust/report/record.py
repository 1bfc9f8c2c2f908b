"""Replay a trained run: load its agent and novelty module, record episodes, score their frames.

Shapes: ``T`` steps of one episode; agent observations ``[C, H, W]`` uint8; ``N`` = the run's
``num_envs`` (sequential novelty modules keep one memory per env).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from wanderlust.agent.actor_critic import ActorCritic, build_agent
from wanderlust.algo.evaluate import start_episode
from wanderlust.envs.factory import make_env, obs_spec
from wanderlust.envs.maze import MazeEnv, MazeLayout
from wanderlust.envs.maze.mapview import draw_map
from wanderlust.novelty import make_novelty
from wanderlust.novelty.base import NoveltyModule
from wanderlust.report.data import visit_counts
from wanderlust.runtime.checkpoint import read_checkpoint
from wanderlust.runtime.config import TrainConfig
from wanderlust.runtime.rundir import CHECKPOINTS_DIR, load_config

NOVELTY_CHUNK = 512
"""Transitions per novelty forward pass when a whole episode is scored at once."""


@dataclass(frozen=True)
class MazeView:
    """What redrawing the top-down map of one maze episode needs."""

    layout: MazeLayout
    """The episode's maze."""
    cell_region: np.ndarray
    """``[S, S]`` region id per cell (map tints)."""
    goal: tuple[float, float] | None
    """Goal pillar (x, y), or None."""


@dataclass
class EpisodeRecord:
    """One played episode, step by step."""

    obs: np.ndarray
    """``[T + 1, C, H, W]`` uint8: the reset observation, then the frame each action produced."""
    env_actions: np.ndarray
    """``[T, A]`` float32 (Box, what the env received) or ``[T]`` int64 (Discrete)."""
    rewards: np.ndarray
    """``[T]`` float64 extrinsic rewards."""
    ended: bool
    """True if the episode terminated or truncated (False: recording stopped at ``max_steps``)."""
    cells: np.ndarray | None = None
    """Maze only: ``[T + 1, 2]`` int64 (row, col) from ``info['cell']``."""
    poses: np.ndarray | None = None
    """Maze only: ``[T + 1, 4]`` float32 (x, y, heading, pitch) from ``info['pose']``."""
    coverage: float | None = None
    """Maze only: fraction of cells visited at the last step."""
    maze: MazeView | None = None
    """Maze only: layout and colours for the map."""

    @property
    def steps(self) -> int:
        return len(self.rewards)

    @property
    def episode_return(self) -> float:
        return float(np.sum(self.rewards))


StepCallback = Callable[[np.ndarray, np.ndarray, np.ndarray, bool, dict], None]
"""``on_step(obs, env_action, next_obs, ended, info)``, called after every env step."""


def record_episode(
    env: gym.Env, act: Callable[[np.ndarray], np.ndarray], seed: int, max_steps: int | None = None,
    on_step: StepCallback | None = None,
) -> EpisodeRecord:
    """Play one episode of ``env`` (reset with ``seed``) with actions from ``act``, keeping every
    observation, action and reward, and the maze ground truth when ``env`` is a maze. Stops early
    after ``max_steps`` steps if given."""
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"max_steps must be >= 1 or None, got {max_steps}")
    obs, info = env.reset(seed=seed)
    start_episode(act)
    maze_env = env.unwrapped if isinstance(env.unwrapped, MazeEnv) else None
    observations, actions, rewards, infos = [obs], [], [], [info]
    ended = False
    while not ended and (max_steps is None or len(rewards) < max_steps):
        action = np.asarray(act(obs))
        next_obs, reward, terminated, truncated, info = env.step(action)
        ended = bool(terminated or truncated)
        if on_step is not None:
            on_step(obs, action, next_obs, ended, info)
        observations.append(next_obs)
        actions.append(action)
        rewards.append(float(reward))
        infos.append(info)
        obs = next_obs
    record = EpisodeRecord(np.stack(observations), np.stack(actions), np.asarray(rewards, dtype=np.float64), ended)
    if maze_env is not None:
        goal = maze_env.goal_cell
        record.cells = np.stack([np.asarray(i["cell"], dtype=np.int64) for i in infos])
        record.poses = np.stack([np.asarray(i["pose"], dtype=np.float32) for i in infos])
        record.coverage = float(infos[-1]["coverage"])
        record.maze = MazeView(maze_env.layout, maze_env.cell_region,
                               None if goal is None else (goal[1] + 0.5, goal[0] + 0.5))
    return record


def map_frame(record: EpisodeRecord, t: int) -> np.ndarray:
    """The maze's top-down map ``[M, M, 3]`` uint8 as it looked at step ``t`` (0 = after reset):
    cells visited so far tinted, the trail so far, the agent's pose."""
    if record.maze is None or record.cells is None or record.poses is None:
        raise ValueError("map_frame needs a maze episode (record.maze is None: not a maze env)")
    if not 0 <= t < len(record.poses):
        raise ValueError(f"step {t} is outside the episode's 0..{len(record.poses) - 1}")
    maze = record.maze
    visited = visit_counts(record.cells[: t + 1], maze.layout.size) > 0
    x, y, heading = (float(v) for v in record.poses[t, :3])
    return draw_map(maze.layout, maze.cell_region, visited, record.poses[: t + 1, :2].astype(np.float64),
                    (x, y, heading), maze.goal)


@dataclass
class LoadedRun:
    """A run folder's config, agent and novelty module from its latest valid checkpoint."""

    config: TrainConfig
    agent: ActorCritic
    """In eval mode, on CPU."""
    novelty: NoveltyModule
    """The module that rewarded the agent, with its trained state."""
    step: int
    """Environment steps trained when the checkpoint was written."""
    checkpoint: Path
    """The checkpoint folder that was loaded."""
    observation_shape: tuple[int, ...]
    """``(C, H, W)`` (or ``(D,)``) of the observations agent and novelty module were built for."""


def load_run(run_dir: Path) -> LoadedRun:
    """Rebuild agent and novelty module as the trainer's ``Learner`` does and load both from the
    latest valid checkpoint (one read). Errors (missing config or checkpoint) are one-line ValueErrors."""
    config = TrainConfig.from_dict(load_config(run_dir))
    loaded = read_checkpoint(Path(run_dir) / CHECKPOINTS_DIR)
    state = loaded.state
    if state.get("novelty_name", config.novelty_name) != config.novelty_name:
        raise ValueError(f"checkpoint {loaded.path} was trained with novelty '{state['novelty_name']}' but "
                         f"config.json says '{config.novelty_name}'; the run folder is inconsistent")
    env = make_env(config.env)
    try:
        observation_space, action_space = env.observation_space, env.action_space
    finally:
        env.close()
    agent = build_agent(config, observation_space.shape, action_space)
    agent.load_state_dict(state["agent"])
    novelty = make_novelty(config.novelty_name, config.novelty, obs_spec(observation_space, config.env),
                           action_space, config.env.num_envs, "cpu")
    novelty.load_state_dict(state["novelty"])
    return LoadedRun(config, agent.eval(), novelty, loaded.step, loaded.path, tuple(observation_space.shape))


class NoveltyScorer:
    """Raw novelty (what the trainer feeds to its normalizer) of the transitions of single episodes.

    Whole-rollout modules (rnd, icm) score any batch. Sequential modules (pixel, episodic) hold one
    memory per training env, ``N`` of them: each transition is given to all ``N`` envs at once and
    env 0's reward is kept. Before the first transition of an episode the memories are cleared
    through the interface's own rule (a transition flagged as an episode end clears them after its
    reward), so an episode is scored against its own frames only, as in training.
    """

    def __init__(self, module: NoveltyModule, num_envs: int) -> None:
        self.module = module
        self.num_envs = num_envs
        self._fresh = True

    def reset(self) -> None:
        """The next transition starts a new episode."""
        self._fresh = True

    def score(self, obs: np.ndarray, env_action: np.ndarray, next_obs: np.ndarray, ended: bool) -> float:
        """Novelty of one transition ``obs [C, H, W] -> next_obs`` caused by ``env_action``;
        ``ended``: it ended the episode (the next call starts a new one)."""
        copies = self.num_envs if self.module.sequential else 1
        obs_t, next_t = (torch.from_numpy(np.asarray(x))[None].repeat_interleave(copies, 0) for x in (obs, next_obs))
        action_t = _action_tensor(np.asarray(env_action)[None]).repeat_interleave(copies, 0)
        if self.module.sequential and self._fresh:
            self.module.reward(obs_t, obs_t, action_t, torch.ones(copies, dtype=torch.bool))  # clears memories
        self._fresh = False  # an ended transition clears the memories itself
        return float(self.module.reward(obs_t, next_t, action_t, torch.full((copies,), ended))[0])

    def score_episode(self, record: EpisodeRecord) -> np.ndarray:
        """``[T]`` float64: novelty of each transition of ``record`` (of the frame ``record.obs[t + 1]``)."""
        self.reset()
        if self.module.sequential:
            last = record.steps - 1
            return np.array([
                self.score(record.obs[t], record.env_actions[t], record.obs[t + 1], record.ended and t == last)
                for t in range(record.steps)
            ], dtype=np.float64)
        ends = torch.zeros(record.steps, dtype=torch.bool)
        ends[-1] = record.ended
        obs, next_obs = torch.from_numpy(record.obs[:-1]), torch.from_numpy(record.obs[1:])
        actions = _action_tensor(record.env_actions)
        chunks = [
            self.module.reward(obs[i:i + NOVELTY_CHUNK], next_obs[i:i + NOVELTY_CHUNK],
                               actions[i:i + NOVELTY_CHUNK], ends[i:i + NOVELTY_CHUNK])
            for i in range(0, record.steps, NOVELTY_CHUNK)
        ]
        return torch.cat(chunks).to(torch.float64).cpu().numpy()


def _action_tensor(env_actions: np.ndarray) -> torch.Tensor:
    """``[B]`` int64 for discrete actions, ``[B, A]`` float32 for sticks (the novelty interface)."""
    if np.issubdtype(env_actions.dtype, np.integer):
        return torch.from_numpy(env_actions.astype(np.int64)).reshape(-1)
    return torch.from_numpy(env_actions.astype(np.float32))
