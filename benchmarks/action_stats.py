"""What a trained stick policy does with its sticks: per-axis action statistics of run folders.

Plays each run's latest checkpoint as evaluation does (sampled actions, held noise as trained) on
the evaluation mazes of ``exploration.py`` and prints, for each stick axis, the mean env action,
the mean absolute action and the fraction of steps at the end of its range (|a| > 0.95), next to
the learned log-std and the coverage. A policy whose Gaussian mean has run past tanh's saturation
shows |a| near 1 and a large saturated fraction on that axis; ``--untrained`` adds each run's
config with fresh weights, which should sit near 0 mean and a small saturated fraction.

    python benchmarks/action_stats.py runs/rnd runs/episodic --episodes 2 --untrained
"""

from __future__ import annotations

import argparse
from pathlib import Path

import _common  # noqa: F401  (puts <repo>/src on sys.path)
import numpy as np
import torch
from _common import markdown_table, set_torch_threads

from wanderlust.agent.actor_critic import build_agent
from wanderlust.algo.evaluate import PolicyActor, load_policy, play_episodes
from wanderlust.envs.factory import make_env
from wanderlust.runtime.config import TrainConfig

EVAL_SEED = 10_000  # exploration.py's evaluation mazes
SATURATED = 0.95
AXES = ("turn", "pitch", "strafe", "walk")
"""The maze's four stick axes, in action order (the seed's camera x/y, then walk x/y)."""


def stick_stats(actions: np.ndarray) -> dict[str, np.ndarray]:
    """Per-axis ``mean``, ``mean_abs`` and ``saturated`` (fraction with |a| > 0.95) of ``actions [S, A]``.

    >>> stats = stick_stats(np.array([[1.0, 0.0], [-0.5, 0.0], [0.96, 0.5]]))
    >>> [round(float(x), 3) for x in stats["mean"]], [round(float(x), 3) for x in stats["saturated"]]
    ([0.487, 0.167], [0.667, 0.0])
    """
    actions = np.asarray(actions, dtype=np.float64)
    if actions.ndim != 2 or len(actions) == 0:
        raise ValueError(f"actions must be [steps, axes] with at least one step, got shape {actions.shape}")
    return {"mean": actions.mean(0), "mean_abs": np.abs(actions).mean(0),
            "saturated": (np.abs(actions) > SATURATED).mean(0)}


def play(config: TrainConfig, agent, episodes: int, episode_steps: int) -> tuple[np.ndarray, float]:
    """The env actions ``[S, A]`` the agent sends over ``episodes`` evaluation mazes, and its mean coverage."""
    config.env.max_episode_steps = episode_steps
    actor, sent = PolicyActor(agent, noise_hold=config.noise_hold), []

    class Recording:
        def start_episode(self) -> None:
            actor.start_episode()

        def __call__(self, obs: np.ndarray) -> np.ndarray:
            sent.append(actor(obs))
            return sent[-1]

    played = play_episodes(config.env, Recording(), episodes, EVAL_SEED)
    return np.stack(sent), float(np.mean([info["coverage"] for _, _, info in played]))


def untrained(config: TrainConfig):
    """``config``'s agent with fresh weights (seeded by ``config.seed``)."""
    env = make_env(config.env)
    try:
        with torch.random.fork_rng():
            torch.manual_seed(config.seed)
            return build_agent(config, env.observation_space.shape, env.action_space).eval()
    finally:
        env.close()


def row(name: str, agent, actions: np.ndarray, coverage: float) -> list[str]:
    stats = stick_stats(actions)
    log_std = " ".join(f"{v:+.2f}" for v in agent.log_std.detach().tolist()) if agent.log_std is not None else "-"
    cells = [" ".join(f"{v:+.2f}" for v in stats[key]) for key in ("mean", "mean_abs", "saturated")]
    return [name, *cells, log_std, f"{coverage:.1%}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="run folders (their latest checkpoint is played)")
    parser.add_argument("--episodes", type=int, default=2, help="evaluation mazes per run")
    parser.add_argument("--episode-steps", type=int, default=1000)
    parser.add_argument("--untrained", action="store_true", help="also play each run's config with fresh weights")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    set_torch_threads(args.threads)
    rows = []
    for run in args.runs:
        config, agent = load_policy(run)
        if agent.log_std is None:
            parser.error(f"{run}: not a squashed Gaussian stick policy (Discrete actions or action_bins)")
        rows.append(row(str(run), agent, *play(config, agent, args.episodes, args.episode_steps)))
        if args.untrained:
            fresh = untrained(config)
            rows.append(row(f"{run} (untrained)", fresh, *play(config, fresh, args.episodes, args.episode_steps)))
    print(f"\nper axis ({', '.join(AXES)} for the maze); {args.episodes} evaluation mazes from seed {EVAL_SEED}\n")
    print(markdown_table(["run", "mean action", "mean abs action", f"at the end (abs > {SATURATED})", "log-std",
                          "coverage"], rows))


if __name__ == "__main__":
    main()
