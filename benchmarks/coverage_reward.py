"""Diagnostic: how much coverage can PPO learn when the reward *is* coverage?

Curiosity agents are judged by maze coverage, but they never see it. This script separates the
two halves of the problem: it trains wanderlust's PPO (no novelty) on the maze with a privileged
extrinsic reward of +1 per newly entered cell, then measures coverage on the same unseen mazes as
``benchmarks/exploration.py``. If PPO cannot learn to cover the maze with this reward at a budget,
no novelty reward will do it at that budget; if it can, the gap is in what the novelty pays for
(see ``benchmarks/novelty_alignment.py``).

    python benchmarks/coverage_reward.py --steps 60000
    python benchmarks/coverage_reward.py --env-id wanderlust/MazeDiscrete-v0 --set ppo.clip_coef=0.2
    python benchmarks/coverage_reward.py --steps 300000 --keep-run runs/coverage   # keep metrics.jsonl etc.

The agent starts from the ``default`` preset (what ``wanderlust train`` and ``exploration.py`` use);
``--set`` changes it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _common  # noqa: F401  (puts <repo>/src on sys.path)
import gymnasium as gym
import numpy as np
from _common import markdown_table, run_folder, set_torch_threads
from exploration import EVAL_SEED, baseline

from wanderlust.algo.evaluate import load_policy, run_episodes
from wanderlust.algo.trainer import train
from wanderlust.envs.maze.env import MazeEnv
from wanderlust.runtime.config import TrainConfig, apply_overrides, make_preset
from wanderlust.runtime.rundir import save_config

IDS = ("wanderlust/Maze-v0", "wanderlust/MazeDiscrete-v0")


class NewCellReward(gym.Wrapper):
    """Reward = number of cells entered for the first time this episode (0 or 1 per step)."""

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._visited = int(info["cells_visited"])
        return obs, info

    def step(self, action):
        obs, _, terminated, truncated, info = self.env.step(action)
        reward = float(info["cells_visited"] - self._visited)
        self._visited = int(info["cells_visited"])
        return obs, reward, terminated, truncated, info


def _make(discrete: bool, max_steps: int = 1000, size: int = 9, obs_size: int = 64) -> gym.Env:
    return NewCellReward(MazeEnv(discrete=discrete, max_steps=max_steps, size=size, obs_size=obs_size))


def register(env_id: str, config: TrainConfig) -> str:
    """Register (once) the rewarded twin of maze ``env_id`` with ``config.env``'s maze size, frame
    size and episode length; returns its id."""
    env = config.env
    steps = env.max_episode_steps or 1000
    rewarded_id = f"bench/{env_id.split('/')[1].split('-')[0]}CoverageReward{env.maze_size}x{env.maze_obs_size}x{steps}-v0"
    if rewarded_id not in gym.registry:
        gym.register(rewarded_id, entry_point=_make, kwargs={
            "discrete": "Discrete" in env_id, "max_steps": steps, "size": env.maze_size, "obs_size": env.maze_obs_size,
        })
    return rewarded_id


def train_and_evaluate(
    config: TrainConfig, env_id: str, episodes: int, episode_steps: int, keep_in: Path | None = None,
) -> tuple[int, list[float]]:
    """Train ``config`` on the rewarded twin of ``env_id``; coverage of the policy on ``env_id``'s
    evaluation mazes. Returns (steps trained, coverages); an interrupted run (Ctrl-C, SIGTERM) is
    evaluated at its last checkpoint and reports the steps it reached. The run folder is temporary unless
    ``keep_in`` names a new folder to keep it in (metrics.jsonl, TensorBoard, checkpoint)."""
    config.env.env_id = register(env_id, config)
    config.novelty_name = "none"
    config.checkpoint_every = config.total_steps
    with run_folder(keep_in, "wanderlust-coverage-reward-") as tmp:
        save_config(tmp, config.to_dict())
        trained = train(config, tmp, show_progress=False)
        if trained.interrupted:  # Ctrl-C / SIGTERM: evaluate the checkpoint of the last finished update
            print(f"  interrupted after {trained.global_step:,} steps: evaluating that checkpoint", flush=True)
        config, agent = load_policy(tmp)
    config.env.env_id = env_id
    config.env.max_episode_steps = episode_steps
    result = run_episodes(config, agent, episodes, seed=EVAL_SEED)
    return trained.global_step, [e.coverage for e in result.episodes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="wanderlust/Maze-v0", choices=IDS)
    parser.add_argument("--steps", type=int, default=60_000, help="training steps")
    parser.add_argument("--episodes", type=int, default=5, help="seeded evaluation episodes")
    parser.add_argument("--episode-steps", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    parser.add_argument("--keep-run", type=Path, metavar="DIR", help="keep the run folder here (a new folder)")
    parser.add_argument("--seed", type=int, default=1, help="training seed")
    parser.add_argument("--json", type=Path, help="also write the rows here, as exploration.py --json does")
    args = parser.parse_args()
    set_torch_threads(args.threads)
    config = make_preset("default")
    config.total_steps = args.steps
    config.seed = args.seed
    apply_overrides(config, args.set)
    steps, coverages = train_and_evaluate(config, args.env_id, args.episodes, args.episode_steps, args.keep_run)
    random = baseline("random", args.episodes, args.episode_steps, "Discrete" in args.env_id)["coverages"]
    rows = [["random", 0, f"{np.mean(random):.1%}", "1.00x"],
            ["PPO, reward = new cells", f"{steps:,}", f"{np.mean(coverages):.1%}", f"{np.mean(coverages) / np.mean(random):.2f}x"]]
    print(f"\n{args.env_id}: coverage in {args.episode_steps}-step episodes, {args.episodes} unseen mazes\n")
    print(markdown_table(["agent", "train steps", "coverage", "vs random"], rows))
    if args.json:
        args.json.write_text(json.dumps([
            {"method": "random", "train_steps": 0, "train_seconds": 0.0, "coverages": random},
            {"method": "coverage reward", "seed": config.seed, "train_steps": steps, "train_seconds": float("nan"),
             "coverages": coverages},
        ], indent=2))


if __name__ == "__main__":
    main()
