"""Does a novelty reward pay for exploring? Intrinsic reward per episode of scripted behaviours.

A curiosity agent learns whatever its novelty reward pays for. This script plays scripted
behaviours in the maze (no learning) and sums the reward each *untrained* novelty module gives
them over one episode, next to the coverage they reach. If a behaviour that stays in one place
("look around", "spin") earns as much as one that explores, maximizing that reward does not
teach exploring (the "couch potato" failure of pixel-based curiosity).

Behaviours (stick maze; the discrete maze has no pitch, so "look" there is turning in place):
    random    uniform random actions (the benchmark's random baseline)
    oracle    depth-first walk of the maze graph (the coverage ceiling)
    corridor  memoryless walk of the maze graph, back only at dead ends (a reactive policy's reach)
    held-random  uniform random actions, each held for 4 steps (persistence alone)
    walk      always walk forward, turn randomly (sticks: walk y = 1, camera x ~ N(0, 0.7))
    spin      turn right on the spot
    look      move the camera randomly (camera x and y), never walk

    python benchmarks/novelty_alignment.py                     # stick maze, pixel + episodic
    python benchmarks/novelty_alignment.py --env-id wanderlust/MazeDiscrete-v0
    python benchmarks/novelty_alignment.py --methods pixel --set novelty.pixel.aggregate=nearest
    python benchmarks/novelty_alignment.py --from-run runs/maze   # the run's novelty module as trained

``--from-run RUN_DIR`` scores the behaviours with the novelty module of a training run, as its latest
checkpoint left it (learned networks and running statistics; the per-env episode memory starts empty,
as it does in every new episode), with the run's config: does the reward the agent was trained on
*at the end* still pay for exploring?
"""

from __future__ import annotations

import argparse
from pathlib import Path

import _common  # noqa: F401  (puts <repo>/src on sys.path)
import numpy as np
import torch
from _common import markdown_table, set_torch_threads

from wanderlust.envs.factory import make_env, obs_spec
from wanderlust.envs.maze.env import DISCRETE_ACTIONS
from wanderlust.envs.maze.explorers import EXPLORER_NAMES, make_explorer
from wanderlust.novelty import make_novelty
from wanderlust.runtime.checkpoint import load_checkpoint
from wanderlust.runtime.config import TrainConfig, apply_overrides
from wanderlust.runtime.rundir import load_config

BEHAVIOURS = ("random", "oracle", "corridor", "held-random", "walk", "spin", "look")
PER_ENV_STATE = {"episodic": ("memory", "previous"), "pixel": ("frames", "counts")}
"""State entries that hold one env's episode (sized by the run's num_envs): kept fresh, not loaded."""
_FORWARD, _LEFT, _RIGHT, _NOOP = (DISCRETE_ACTIONS.index(a) for a in ("forward", "turn_left", "turn_right", "noop"))


class Scripted:
    """A scripted behaviour for the stick (``discrete=False``) or discrete maze."""

    def __init__(self, name: str, discrete: bool, rng: np.random.Generator) -> None:
        self.name, self.discrete, self.rng = name, discrete, rng

    def reset(self, env) -> None:
        """Nothing to remember between episodes."""

    def act(self, env) -> np.ndarray | int:
        rng = self.rng
        if self.discrete:
            if self.name == "spin":
                return _RIGHT
            if self.name == "look":
                return int(rng.choice([_NOOP, _LEFT, _RIGHT]))
            return int(rng.choice([_FORWARD, _FORWARD, _FORWARD, _LEFT, _RIGHT]))  # walk
        if self.name == "spin":
            return np.array([1.0, 0.0, 0.0, 0.0], np.float32)
        if self.name == "look":
            return np.clip(rng.normal(size=4) * [1.0, 1.0, 0.0, 0.0], -1, 1).astype(np.float32)
        return np.array([np.clip(rng.normal() * 0.7, -1, 1), 0.0, 0.0, 1.0], np.float32)  # walk


def behaviour(name: str, discrete: bool, seed: int):
    rng = np.random.default_rng(seed)
    if name in EXPLORER_NAMES:
        return make_explorer(name, seed=int(rng.integers(2**31)))
    return Scripted(name, discrete, rng)


def trained_run(run_dir: Path) -> tuple[TrainConfig, dict]:
    """The config of ``run_dir`` and its novelty module's state from the latest checkpoint."""
    config = TrainConfig.from_dict(load_config(run_dir))
    return config, load_checkpoint(run_dir / "checkpoints")["novelty"]


def episode_rewards(
    config: TrainConfig, methods: list[str], name: str, seed: int, steps: int, trained: dict | None = None,
) -> tuple[dict, float]:
    """Sum of each method's reward over one ``steps``-step episode of behaviour ``name``; and its coverage.
    ``trained`` is the state of the one method's trained module (see :func:`trained_run`); without it
    the modules are untrained."""
    env = make_env(config.env)
    try:
        spec = obs_spec(env.observation_space, config.env)
        torch.manual_seed(0)  # the same untrained networks for every behaviour
        modules = {m: make_novelty(m, config.novelty, spec, env.action_space, 1, "cpu") for m in methods}
        if trained is not None:
            (method,) = methods
            state = dict(trained)
            fresh = modules[method].state_dict()
            for key in PER_ENV_STATE.get(method, ()):
                state[key] = fresh[key]
            modules[method].load_state_dict(state)
        obs, info = env.reset(seed=seed)
        actor = behaviour(name, "Discrete" in config.env.env_id, seed)
        actor.reset(env)
        totals = dict.fromkeys(methods, 0.0)
        batch_obs = torch.from_numpy(obs)[None]
        not_ended = torch.zeros(1, dtype=torch.bool)
        for _ in range(steps):
            action = actor.act(env)
            obs, _, terminated, truncated, info = env.step(action)
            batch_next = torch.from_numpy(obs)[None]
            batch_action = torch.as_tensor(np.asarray(action))[None]
            for method, module in modules.items():
                if module.sequential:
                    totals[method] += float(module.reward(batch_obs, batch_next, batch_action, not_ended)[0])
                else:
                    totals[method] += float(module.reward(batch_obs, batch_next, batch_action, not_ended).sum())
            batch_obs = batch_next
            if terminated or truncated:
                break
        return totals, float(info["coverage"])
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="wanderlust/Maze-v0", help="maze variant (Box sticks or Discrete)")
    parser.add_argument("--methods", default="pixel,episodic", help="comma-separated novelty modules")
    parser.add_argument("--episodes", type=int, default=3, help="episodes per behaviour (seeds 100, 101, ...)")
    parser.add_argument("--steps", type=int, default=1000, help="steps per episode")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for the modules, e.g. novelty.pixel.aggregate=nearest (repeatable)")
    parser.add_argument("--from-run", type=Path, metavar="RUN_DIR",
                        help="score with this training run's novelty module as trained (its config; --methods ignored)")
    args = parser.parse_args()
    if args.episodes < 1 or args.steps < 2:
        parser.error("--episodes must be >= 1 and --steps >= 2")
    set_torch_threads(args.threads)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    config, trained = TrainConfig(), None
    if args.from_run is not None:
        config, trained = trained_run(args.from_run)
        methods = [config.novelty_name]
    else:
        config.env.env_id = args.env_id
    config.env.num_envs = 1
    config.env.max_episode_steps = args.steps
    apply_overrides(config, args.set)
    results = {}
    for name in BEHAVIOURS:
        runs = [episode_rewards(config, methods, name, 100 + i, args.steps, trained) for i in range(args.episodes)]
        results[name] = ({m: float(np.mean([r[0][m] for r in runs])) for m in methods},
                         float(np.mean([r[1] for r in runs])))
        print(f"  {name}: done", flush=True)
    rows = []
    for name, (totals, coverage) in results.items():
        rows.append([name, f"{coverage:.1%}"] + [
            f"{totals[m]:,.1f} ({totals[m] / results['random'][0][m]:.2f}x)" if results["random"][0][m] else f"{totals[m]:,.1f}"
            for m in methods
        ])
    modules = f"the novelty module of {args.from_run}" if trained is not None else "untrained novelty modules"
    print(f"\n{config.env.env_id}: reward per {args.steps}-step episode of {modules} "
          f"(mean of {args.episodes}; ratio to random)\n")
    print(markdown_table(["behaviour", "coverage"] + [f"{m} reward" for m in methods], rows))


if __name__ == "__main__":
    main()
