"""Montezuma's Revenge: a smoke budget on CPU (rooms visited and score), and the full GPU command.

The RND paper (Burda et al. 2018) trains for 30K rollouts of 128 steps in 128 envs (491.52M agent
steps, 1.97B frames) and reports a mean episodic return of 8,152 (PPO without RND: 2,497). That
does not fit a CPU; this script runs the ``rnd-atari`` preset with fewer envs for a small budget to
check that the whole pipeline works on the real game, and reports:

- during training: the rooms visited per finished episode (RAM byte 3, mean of the last 100
  episodes, ``charts/coverage`` x 24) and the mean episodic return, at the end of training;
- after training: ``--episodes`` evaluation episodes of the trained policy (actions sampled):
  rooms visited and score, next to a uniformly random policy on the same seeds.

    python benchmarks/montezuma.py                  # smoke: 100k agent steps, 8 envs, RND (CPU)
    python benchmarks/montezuma.py --quick          # 2 envs x 16 steps, 1 update, 1 evaluation episode
    python benchmarks/montezuma.py --methods rnd,none --steps 200000

The full run (GPU; about 2B frames) is printed by ``--print-full-command``:

    wanderlust train ALE/MontezumaRevenge-v5 --preset rnd-atari --device cuda \\
        --set env.vector_mode=async --run-dir runs/montezuma-rnd
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts <repo>/src on sys.path)
import numpy as np
from _common import markdown_table, set_torch_threads
from _episodes import play_episodes, wanderlust_act

from wanderlust.algo.trainer import Learner, train
from wanderlust.envs.families import MONTEZUMA_ROOMS
from wanderlust.runtime.config import TrainConfig, make_preset
from wanderlust.runtime.presets import RND_ROLLOUTS_PER_ENV

ENV_ID = "ALE/MontezumaRevenge-v5"
EVAL_SEED = 90_000
FULL_COMMAND = ("wanderlust train ALE/MontezumaRevenge-v5 --preset rnd-atari --device cuda "
                "--set env.vector_mode=async --run-dir runs/montezuma-rnd")


def smoke_config(method: str, steps: int, num_envs: int, num_steps: int, seed: int) -> TrainConfig:
    config = make_preset("rnd-atari")
    config.env.num_envs = num_envs
    config.ppo.num_steps = num_steps
    config.novelty_name = method
    config.novelty.rnd.minibatch_size = max(1, num_envs * num_steps // config.ppo.num_minibatches)
    config.total_steps = steps
    config.seed = seed
    config.checkpoint_every = steps
    config.validate()
    return config


def run(config: TrainConfig, episodes: int) -> dict:
    """Train, then evaluate the final policy; rooms and scores per evaluation episode."""
    last: dict = {}

    def on_update(learner: Learner, metrics: dict[str, float]) -> None:
        last["learner"], last["metrics"] = learner, metrics

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="wanderlust-montezuma-") as tmp:
        train(config, Path(tmp), show_progress=False, on_update=on_update)
    minutes = (time.perf_counter() - started) / 60
    played = play_episodes(config, wanderlust_act(last["learner"]), episodes, EVAL_SEED)
    coverage = last["metrics"].get("charts/coverage", math.nan)
    return {
        "steps": last["learner"].global_step,
        "train_rooms": coverage * MONTEZUMA_ROOMS,
        "train_return": last["metrics"]["charts/episodic_return"],
        "eval_rooms": [info["rooms_visited"] for _, info in played],
        "eval_scores": [score for score, _ in played],
        "minutes": minutes,
    }


def random_floor(config: TrainConfig, episodes: int) -> dict:
    rng = np.random.default_rng(EVAL_SEED)
    played = play_episodes(config, lambda obs: np.int64(rng.integers(18)), episodes, EVAL_SEED)
    return {"eval_rooms": [info["rooms_visited"] for _, info in played], "eval_scores": [s for s, _ in played]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", default="rnd", help="comma-separated novelty modules (rnd, none, ...)")
    parser.add_argument("--steps", type=int, default=100_000, help="agent steps (x4 frames) per method")
    parser.add_argument("--num-envs", type=int, default=8, help="parallel envs (the paper: 128)")
    parser.add_argument("--num-steps", type=int, default=128, help="rollout length")
    parser.add_argument("--episodes", type=int, default=3, help="evaluation episodes (up to 4,500 steps each)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--quick", action="store_true", help="one update of 2 envs x 16 steps, 1 evaluation episode")
    parser.add_argument("--print-full-command", action="store_true", help="print the full GPU run's command and exit")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    paper_steps = RND_ROLLOUTS_PER_ENV * 128 * 128
    if args.print_full_command:
        print(f"{FULL_COMMAND}\n# {paper_steps:,} agent steps = {paper_steps * 4:,} frames (RND paper budget)")
        return
    if args.quick:
        args.steps, args.num_envs, args.num_steps, args.episodes = 32, 2, 16, 1
    set_torch_threads(args.threads)

    rows, results = [], {}
    first = smoke_config("none", args.steps, args.num_envs, args.num_steps, args.seed)
    floor = random_floor(first, args.episodes)
    rows.append(["random policy", 0, "", "", np.mean(floor["eval_rooms"]), max(floor["eval_rooms"]),
                 np.mean(floor["eval_scores"]), max(floor["eval_scores"]), 0.0])
    results["random"] = floor
    for method in [m.strip() for m in args.methods.split(",") if m.strip()]:
        result = run(smoke_config(method, args.steps, args.num_envs, args.num_steps, args.seed), args.episodes)
        results[method] = result
        rows.append([f"wanderlust {method}", result["steps"], result["train_rooms"], result["train_return"],
                     np.mean(result["eval_rooms"]), max(result["eval_rooms"]), np.mean(result["eval_scores"]),
                     max(result["eval_scores"]), result["minutes"]])
        print(f"  {method}: eval rooms {result['eval_rooms']}, scores {result['eval_scores']} "
              f"({result['minutes']:.1f} min)", flush=True)
    print(f"\nMontezuma's Revenge smoke budget ({args.num_envs} envs x {args.num_steps} steps, seed {args.seed}; "
          f"{args.episodes} evaluation episodes; training columns: mean of the last 100 finished episodes, "
          "nan if none finished):\n")
    print(markdown_table(["agent", "agent steps", "train rooms", "train return", "eval rooms (mean)",
                          "eval rooms (max)", "eval score (mean)", "eval score (max)", "minutes"], rows))
    print(f"\nFull run (GPU, {paper_steps * 4:,} frames as in the RND paper):\n  {FULL_COMMAND}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=float))


if __name__ == "__main__":
    main()
