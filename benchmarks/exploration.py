"""Coverage of the 9 x 9 maze after training, per novelty module, next to random and the oracle.

Each curiosity agent is trained for the same budget on ``wanderlust/Maze-v0`` (a new maze every
episode, no extrinsic reward), then plays 5 seeded evaluation episodes of 1,000 steps on mazes it
has never seen. The random baseline and the oracle (depth-first walk of the maze graph, the ceiling)
play the same seeds through the same action space, and so do two references between them:
``held-random`` (each random action held for 4 steps: what persistence alone adds) and ``corridor``
(a memoryless walk of the maze graph that turns back only at dead ends: what a reactive corridor
follower without memory covers). Like the oracle, ``corridor`` reads the maze graph.

    python benchmarks/exploration.py            # 300k steps per method (about 15 min each on 2 cores)
    python benchmarks/exploration.py --quick    # 30k steps per method
    python benchmarks/exploration.py --methods episodic,rnd --steps 100000
    python benchmarks/exploration.py --methods rnd --layout-seed 10000   # one fixed maze, trained and evaluated
    python benchmarks/exploration.py --methods rnd --layout-seed 10000 --fixed-start   # ... and one start
    python benchmarks/exploration.py --seed 2 --json s2.json   # one seed; then, over all the seeds' files:
    python benchmarks/exploration.py --summarize s1.json s2.json s3.json

``--layout-seed N`` keeps the maze made from seed ``N`` for every training and evaluation episode
(the evaluation episodes then differ only in their start): a test of lifelong novelty (RND, ICM),
which has nothing to remember across episodes when every episode brings a new maze.
``--fixed-start`` also starts every episode in the top-left cell; with ``--layout-seed`` that is the
setting lifelong novelty was made for (one world, one start, as in Montezuma's Revenge): what the
agent has already seen many times is near the start, what is new is far from it.

``--evaluate RUN_DIR`` trains nothing either: it evaluates the latest checkpoint of a run that was
stopped early (its method, seed and steps from the run folder), next to random and the oracle, so a
stopped run can join ``--summarize`` with its own ``--json``.

``--summarize FILE ...`` trains nothing: it reads ``--json`` files of runs with different seeds and
prints each method's mean coverage over them, its worst and best run, and how many runs reached
twice random's coverage.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import _common  # noqa: F401  (puts <repo>/src on sys.path)
import numpy as np
import torch
from _common import markdown_table, run_folder, set_torch_threads

from wanderlust.agent.actor_critic import build_agent
from wanderlust.algo.evaluate import load_policy, run_episodes
from wanderlust.algo.trainer import train
from wanderlust.envs.factory import make_env, maze_kwargs
from wanderlust.envs.maze import run_explorer
from wanderlust.runtime.checkpoint import load_checkpoint
from wanderlust.runtime.config import EnvConfig, TrainConfig, apply_overrides, make_preset
from wanderlust.runtime.rundir import save_config

EVAL_SEED = 10_000  # evaluation mazes are never among the training seeds' first mazes
REFERENCES = ("held-random", "corridor")
"""Scripted explorers printed between the trained agents and the oracle (see the module docstring)."""


def train_and_evaluate(
    method: str, steps: int, episodes: int, seed: int, episode_steps: int, config: TrainConfig | None = None,
    keep_in: Path | None = None,
) -> dict:
    """Train ``method`` for ``steps`` (on ``config``, default: the default maze config), then
    return its coverage on ``episodes`` unseen evaluation mazes. The run folder is temporary unless
    ``keep_in`` names a folder to keep it in (``<keep_in>/<method>-seed<seed>``)."""
    config = config or make_preset("default", method)
    config.novelty_name = method
    config.total_steps = steps
    config.seed = seed
    config.checkpoint_every = max(steps, 1)
    keep = None if keep_in is None else keep_in / f"{method}-seed{seed}"
    with run_folder(keep, f"wanderlust-explore-{method}-") as tmp:
        print(f"  training {method} in {tmp} (metrics.jsonl shows progress)", flush=True)
        save_config(tmp, config.to_dict())
        started = time.perf_counter()
        trained = train(config, tmp, show_progress=False)
        if trained.interrupted:  # Ctrl-C / SIGTERM: stop the benchmark, do not report a partial run
            raise KeyboardInterrupt(f"{method} interrupted after {trained.global_step:,} steps")
        seconds = time.perf_counter() - started
        config, agent = load_policy(tmp)
    return {"method": method, "seed": seed, "train_steps": trained.global_step, "train_seconds": seconds,
            "coverages": evaluate_policy(config, agent, episodes, episode_steps)}


def evaluate_policy(config: TrainConfig, agent, episodes: int, episode_steps: int) -> list[float]:
    """Coverage of ``agent`` (sampled actions) in ``episodes`` evaluation mazes (seeds EVAL_SEED, ...)."""
    config.env.max_episode_steps = episode_steps
    return [e.coverage for e in run_episodes(config, agent, episodes, seed=EVAL_SEED).episodes]


def evaluate_untrained(config: TrainConfig, episodes: int, episode_steps: int) -> dict:
    """The result row of ``config``'s policy before any update (weights from ``config.seed``): what
    the action noise alone covers, the floor that training starts from."""
    env = make_env(config.env)
    try:
        with torch.random.fork_rng():
            torch.manual_seed(config.seed)
            agent = build_agent(config, env.observation_space.shape, env.action_space).eval()
    finally:
        env.close()
    return {"method": "untrained policy", "seed": config.seed, "train_steps": 0, "train_seconds": 0.0,
            "coverages": evaluate_policy(config, agent, episodes, episode_steps)}


def evaluate_run(run_dir: Path, episodes: int, episode_steps: int) -> dict:
    """The result row of a kept run folder's latest checkpoint (a run stopped before its budget)."""
    config, agent = load_policy(run_dir)
    steps = int(load_checkpoint(run_dir / "checkpoints")["global_step"])
    return {"method": config.novelty_name, "seed": config.seed, "train_steps": steps, "train_seconds": float("nan"),
            "coverages": evaluate_policy(config, agent, episodes, episode_steps)}


def baseline(name: str, episodes: int, episode_steps: int, discrete: bool = False, layout_seed: int | None = None,
             fixed_start: bool = False) -> dict:
    env = EnvConfig(maze_layout_seed=layout_seed, maze_fixed_start=fixed_start, max_episode_steps=episode_steps)
    env_kwargs = {**maze_kwargs(env), "discrete": discrete}  # the maze the trained agents get
    coverages = [run_explorer(name, episode_steps, seed=EVAL_SEED + i, env_kwargs=env_kwargs)["coverage"]
                 for i in range(episodes)]
    return {"method": name, "train_steps": 0, "train_seconds": 0.0, "coverages": coverages}


def summarize(runs: list[list[dict]]) -> list[list[str]]:
    """Table rows over several ``--json`` results (one list of method results per run, each with
    its own random baseline): per method, the number of runs, the mean of the runs' mean coverages,
    the worst and best run, their mean ratio to random (each run against its own random row) and
    how many runs covered at least twice what random covered. Methods keep their first-seen order."""
    per_method: dict[str, list[tuple[float, float]]] = {}
    for results in runs:
        by_name = {r["method"]: float(np.mean(r["coverages"])) for r in results}
        if "random" not in by_name:
            raise ValueError("a --summarize file has no random row; give the files that exploration.py --json wrote")
        for name, mean in by_name.items():
            per_method.setdefault(name, []).append((mean, mean / by_name["random"]))
    rows = []
    for name, values in per_method.items():
        means, ratios = np.array([m for m, _ in values]), np.array([r for _, r in values])
        rows.append([name, str(len(values)), f"{means.mean():.1%}", f"{means.min():.1%}", f"{means.max():.1%}",
                     f"{ratios.mean():.2f}x", f"{int((ratios >= 2.0).sum())}/{len(values)}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=300_000, help="training steps per method")
    parser.add_argument("--quick", action="store_true", help="30k training steps per method")
    parser.add_argument("--methods", default="pixel,rnd,icm,episodic", help="comma-separated novelty modules")
    parser.add_argument("--episodes", type=int, default=5, help="seeded evaluation episodes")
    parser.add_argument("--episode-steps", type=int, default=1000, help="steps per evaluation episode")
    parser.add_argument("--seed", type=int, default=1, help="training seed")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--env-id", default="wanderlust/Maze-v0", help="maze variant (Box sticks or Discrete)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for the trained agents, e.g. ppo.ent_coef=0")
    parser.add_argument("--layout-seed", type=int, help="one fixed maze (from this seed) for training and evaluation")
    parser.add_argument("--fixed-start", action="store_true",
                        help="start every episode (training and evaluation) in the top-left cell")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep-runs", type=Path, metavar="DIR",
                        help="keep each trained run folder (metrics, TensorBoard, checkpoint) under DIR")
    parser.add_argument("--evaluate", type=Path, metavar="RUN_DIR",
                        help="train nothing: evaluate this run folder's latest checkpoint (a stopped run; "
                             "give the --env-id and --layout-seed it trained with, for the baselines)")
    parser.add_argument("--summarize", type=Path, nargs="+", metavar="JSON",
                        help="train nothing: summarize the --json files of several runs (seeds)")
    args = parser.parse_args()
    if args.summarize:
        try:
            runs = [json.loads(path.read_text()) for path in args.summarize]
            rows = summarize(runs)
        except (OSError, ValueError, KeyError, TypeError) as error:
            parser.error(f"cannot summarize: {error}")
        print(f"\nmean over {len(runs)} runs ({', '.join(str(p) for p in args.summarize)})\n")
        print(markdown_table(["method", "runs", "mean coverage", "worst run", "best run", "vs random",
                              "runs >= 2x random"], rows))
        return
    steps = 30_000 if args.quick else args.steps
    set_torch_threads(args.threads)

    discrete = "Discrete" in args.env_id
    scripted = {name: baseline(name, args.episodes, args.episode_steps, discrete, args.layout_seed, args.fixed_start)
                for name in ("random", *REFERENCES, "oracle")}
    results = [scripted["random"]]
    if args.evaluate is not None:
        results.append(evaluate_run(args.evaluate, args.episodes, args.episode_steps))
        print(f"  {args.evaluate}: {results[-1]['method']}, seed {results[-1]['seed']}, "
              f"stopped at {results[-1]['train_steps']:,} steps", flush=True)
    methods = [] if args.evaluate is not None else [m.strip() for m in args.methods.split(",") if m.strip()]

    def agent_config(method: str | None = None) -> TrainConfig:
        config = make_preset("default", method)  # what `wanderlust train --novelty METHOD` starts from
        config.env.env_id = args.env_id
        config.env.maze_layout_seed = args.layout_seed
        config.env.maze_fixed_start = args.fixed_start
        config.seed = args.seed
        apply_overrides(config, args.set)
        return config

    if methods:
        results.append(evaluate_untrained(agent_config(), args.episodes, args.episode_steps))
    for method in methods:
        config = agent_config(method)
        results.append(train_and_evaluate(method, steps, args.episodes, args.seed, args.episode_steps, config,
                                          keep_in=args.keep_runs))
        print(f"  {method}: mean coverage {np.mean(results[-1]['coverages']):.1%} "
              f"after {results[-1]['train_steps']:,} steps ({results[-1]['train_seconds'] / 60:.1f} min)", flush=True)
    results += [scripted[name] for name in (*REFERENCES, "oracle")]

    random_mean = float(np.mean(results[0]["coverages"]))
    oracle_mean = float(np.mean(results[-1]["coverages"]))
    rows = []
    for r in results:
        mean, std = float(np.mean(r["coverages"])), float(np.std(r["coverages"]))
        rows.append([
            r["method"], f"{r['train_steps']:,}", f"{r['train_seconds'] / 60:.1f}", f"{mean:.1%}", f"{std:.1%}",
            f"{mean / random_mean:.2f}x", f"{mean / oracle_mean:.0%}",
        ])
    mazes = (f"{args.episodes} unseen mazes" if args.layout_seed is None
             else f"{args.episodes} episodes in the training maze (layout seed {args.layout_seed})")
    if args.fixed_start:
        mazes += ", each starting in the top-left cell"
    print(f"\n{args.env_id}: coverage of the 9x9 maze in {args.episode_steps}-step episodes, {mazes} "
          f"(seeds {EVAL_SEED}..{EVAL_SEED + args.episodes - 1})\n")
    print(markdown_table(["method", "train steps", "train min", "coverage", "std", "vs random", "of oracle"], rows))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
