"""Training throughput (env steps per second, learning included): wanderlust PPO vs Stable-Baselines3 PPO.

Both learn on the same env: SB3's vector env is a ``DummyVecEnv`` over wanderlust's own ``make_env``,
so both see identical observations, made by the same wrappers. ``--env`` picks the game:

- ``maze`` (default): ``wanderlust/Maze-v0``, 64x64 RGB, frame stack 4 -> uint8 ``[12, 64, 64]``;
- ``vizdoom``: ``VizdoomMyWayHome-v1`` rendered at 160x120 with action repeat 4, then the
  ``icm-vizdoom`` preset's input: resized to 42x42, grayscale, frame stack 4 -> ``[4, 42, 42]``;
- ``atari``: ``ALE/MontezumaRevenge-v5`` with the ``rnd-atari`` preset's standard preprocessing
  (``AtariPreprocessing``: no-op reset, action repeat 4 with max-pool, 84x84 grayscale; sticky
  actions 0.25), frame stack 4 -> ``[4, 84, 84]``;
- ``--env-id ID``: any id, with the preprocessing of its family's preset (Atari, VizDoom,
  MiniGrid) or wanderlust's defaults; ``--frame-size`` overrides the frame size.

The two implementations share the same network (Nature CNN, 512 features, frames divided by 255 inside), the
same N envs, T steps, minibatch size ``T * N / num_minibatches``, epochs, learning rate (annealed
linearly), gamma, GAE lambda, clip ranges, entropy/value coefficients and gradient clip, all taken
from wanderlust's ``TrainConfig`` defaults. The fair row is wanderlust with ``novelty=none`` (SB3
has no intrinsic reward); ``rnd`` and ``episodic`` rows show what curiosity costs.

Each row runs in a fresh subprocess with the same explicit ``torch.set_num_threads``; the order is
reversed on every other repeat. SPS is measured after the first update (start-up excluded:
imports, env and network construction, first rollout and update); the start-up-inclusive SPS is
reported too. wanderlust is timed until its last ``on_update`` callback, before the final
checkpoint write; mid-run checkpoints are pushed past the run (SB3 writes none).

    python benchmarks/throughput.py             # default: the maze, 8,192 steps per row
    python benchmarks/throughput.py --env vizdoom --threads 1 --repeats 2
    python benchmarks/throughput.py --env-id ALE/Breakout-v5
    python benchmarks/throughput.py --quick     # ~30-40 s: 2,048 steps per row
    python benchmarks/throughput.py --profile none   # cProfile one wanderlust row
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import _common
from _common import default_threads, markdown_table, set_torch_threads, sps, thread_env

ROWS: tuple[str, ...] = ("sb3", "none", "rnd", "episodic")
"""``sb3`` is Stable-Baselines3 PPO; the others are wanderlust PPO with that novelty module."""
DEFAULT_STEPS = 8_192
QUICK_STEPS = 2_048
RESULT_PREFIX = "THROUGHPUT_RESULT "
ENVS: dict[str, str] = {
    "maze": "wanderlust/Maze-v0",
    "vizdoom": "VizdoomMyWayHome-v1",
    "atari": "ALE/MontezumaRevenge-v5",
}
"""``--env`` choices and the id each one trains on."""
FAMILY_PRESETS: dict[str, str] = {"atari": "rnd-atari", "vizdoom": "icm-vizdoom", "minigrid": "minigrid"}
"""The preset whose preprocessing (``TrainConfig.env``) an env family gets; other ids keep the defaults."""


@dataclass
class Measurement:
    """One timed training run."""

    row: str
    """``sb3`` or the wanderlust novelty name."""
    total_steps: int
    """Env steps trained (summed over envs)."""
    total_seconds: float
    """From before env/network construction to the end of the last update."""
    timed_steps: int
    """Env steps after the first update."""
    timed_seconds: float
    """Seconds from the end of the first update to the end of the last."""
    timed_cpu_seconds: float
    """CPU seconds (user + system, all threads) of the process over the same span: robust to other load."""
    parameters: int
    """Trainable parameters of the policy network (novelty networks not counted)."""
    torch_threads: int = 0
    """``torch.get_num_threads()`` in the worker after training (checks that nothing changed it)."""
    obs_shape: list[int] = field(default_factory=list)
    """``[C, H, W]`` of the observations the policy was trained on (checks that every row saw the same)."""


@dataclass(frozen=True)
class EnvChoice:
    """Which env the rows train on, as the command line gave it (passed on to every worker)."""

    env_id: str = ENVS["maze"]
    """The Gymnasium id."""
    num_envs: int = 8
    """N: envs stepped in parallel (wanderlust's default)."""
    frame_size: int | None = None
    """Square frame size the policy sees; None keeps the family preset's."""


def env_config(choice: EnvChoice):
    """The ``EnvConfig`` both implementations train on: the preprocessing of the id's family preset
    (``rnd-atari`` for ALE ids, ``icm-vizdoom`` for VizDoom ids, ``minigrid`` for MiniGrid ids) or
    wanderlust's defaults, with the id, N and frame size of ``choice``."""
    from wanderlust.envs.families import family
    from wanderlust.runtime.config import EnvConfig, make_preset

    kind = family(choice.env_id)
    env = make_preset(FAMILY_PRESETS[kind]).env if kind in FAMILY_PRESETS else EnvConfig()
    env.env_id = choice.env_id
    env.num_envs = choice.num_envs
    if choice.frame_size is not None:
        env.frame_size = choice.frame_size
    return env


def base_config(steps: int, seed: int, threads: int, novelty: str, choice: EnvChoice = EnvChoice()):
    """The wanderlust TrainConfig both implementations are configured from: wanderlust's default PPO
    and network (N envs x 128 steps, 4 epochs x 4 minibatches, Nature CNN) on :func:`env_config`."""
    from wanderlust.runtime.config import TrainConfig

    config = TrainConfig(env=env_config(choice), novelty_name=novelty, total_steps=steps, seed=seed,
                         torch_threads=threads)
    config.checkpoint_every = steps + 1  # only the final checkpoint, after timing stops
    config.validate()
    return config


def describe(env) -> str:
    """One line: the id and the preprocessing both implementations use."""
    parts = [env.env_id]
    if env.env_id.startswith("wanderlust/Maze"):
        parts.append(f"{env.maze_obs_size}x{env.maze_obs_size}")
    if env.vizdoom_resolution:
        parts.append(f"rendered {env.vizdoom_resolution}")
    if env.action_repeat:
        parts.append(f"action repeat {env.action_repeat}")
    if env.frame_size:
        parts.append(f"resized {env.frame_size}x{env.frame_size}")
    parts.append("grayscale" if env.grayscale else "RGB")
    parts.append(f"frame stack {env.frame_stack}")
    return ", ".join(parts)


def run_wanderlust(novelty: str, steps: int, seed: int, threads: int, choice: EnvChoice = EnvChoice()) -> Measurement:
    from wanderlust.algo.trainer import train

    config = base_config(steps, seed, threads, novelty, choice)
    marks: list[tuple[int, float, float]] = []  # (global_step, wall time, cpu time) after each update
    parameters: list[int] = []
    shape: list[int] = []

    def on_update(learner, metrics) -> None:
        marks.append((learner.global_step, time.perf_counter(), time.process_time()))
        if not parameters:
            parameters.append(sum(p.numel() for p in learner.agent.parameters() if p.requires_grad))
            shape.extend(learner.agent.obs_shape)

    with tempfile.TemporaryDirectory(prefix="wanderlust-bench-") as run_dir:
        start = time.perf_counter()
        train(config, Path(run_dir), show_progress=False, on_update=on_update)
    measurement = _measurement(novelty, start, marks, parameters[0])
    measurement.obs_shape = shape
    return measurement


def sb3_model(config, envs):
    """SB3 PPO with ``config``'s PPO numbers and the Nature CNN (512 features, frames / 255) on ``envs``.

    Raises RuntimeError if SB3 would not see the frames as they are (``[C, H, W]`` uint8, not transposed).
    """
    from stable_baselines3 import PPO
    from stable_baselines3.common.torch_layers import NatureCNN

    ppo = config.ppo

    def linear(progress_remaining: float) -> float:  # SB3 counts progress down from 1 to 0
        return ppo.learning_rate * progress_remaining if ppo.anneal_lr else ppo.learning_rate

    model = PPO(
        "CnnPolicy", envs, learning_rate=linear, n_steps=ppo.num_steps,
        batch_size=config.batch_size // ppo.num_minibatches, n_epochs=ppo.update_epochs, gamma=ppo.gamma,
        gae_lambda=ppo.gae_lambda, clip_range=ppo.clip_coef, clip_range_vf=ppo.clip_coef if ppo.clip_vloss else None,
        normalize_advantage=ppo.norm_adv, ent_coef=ppo.ent_coef, vf_coef=ppo.vf_coef,
        max_grad_norm=ppo.max_grad_norm, target_kl=ppo.target_kl, seed=config.seed, device="cpu", verbose=0,
        policy_kwargs={"features_extractor_class": NatureCNN, "features_extractor_kwargs": {"features_dim": 512},
                       "normalize_images": True},
    )
    policy = model.policy
    if not (policy.normalize_images and policy.features_extractor.features_dim == 512
            and policy.observation_space == envs.observation_space and model.env is not None
            and model.env.observation_space == envs.observation_space):
        raise RuntimeError(f"SB3 policy is not the Nature CNN (512) on the env's {envs.observation_space.shape} "
                           "frames divided by 255")
    return model


def run_sb3(steps: int, seed: int, threads: int, choice: EnvChoice = EnvChoice()) -> Measurement:
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    from wanderlust.envs.factory import make_env

    config = base_config(steps, seed, threads, "none", choice)
    marks: list[tuple[int, float, float]] = []

    class Marks(BaseCallback):
        # A rollout starts right after the previous update; training ends right after the last one.
        def _on_rollout_start(self) -> None:
            if self.num_timesteps > 0:
                marks.append((self.num_timesteps, time.perf_counter(), time.process_time()))

        def _on_step(self) -> bool:
            return True

        def _on_training_end(self) -> None:
            marks.append((self.num_timesteps, time.perf_counter(), time.process_time()))

    start = time.perf_counter()
    envs = DummyVecEnv([lambda: make_env(config.env) for _ in range(config.env.num_envs)])
    model = sb3_model(config, envs)
    model.learn(total_timesteps=steps, callback=Marks(), progress_bar=False)
    envs.close()
    parameters = sum(p.numel() for p in model.policy.parameters() if p.requires_grad)
    measurement = _measurement("sb3", start, marks, parameters)
    measurement.obs_shape = list(model.policy.observation_space.shape)
    return measurement


def _measurement(row: str, start: float, marks: list[tuple[int, float, float]], parameters: int) -> Measurement:
    """From ``(step, wall time, cpu time)`` marks taken after each update."""
    (first_step, first_time, first_cpu), (last_step, last_time, last_cpu) = marks[0], marks[-1]
    return Measurement(row, last_step, last_time - start, last_step - first_step, last_time - first_time,
                       last_cpu - first_cpu, parameters)


def worker(row: str, steps: int, seed: int, threads: int, profile: bool, choice: EnvChoice = EnvChoice()) -> None:
    """Run one row in this (fresh) process and print its Measurement as one JSON line."""
    set_torch_threads(threads)
    if row == "sb3":
        run = lambda: run_sb3(steps, seed, threads, choice)  # noqa: E731
    else:
        run = lambda: run_wanderlust(row, steps, seed, threads, choice)  # noqa: E731
    if not profile:
        result = run()
    else:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        result = profiler.runcall(run)
        stats = pstats.Stats(profiler, stream=sys.stdout)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(45)
    import torch

    result.torch_threads = torch.get_num_threads()
    print(RESULT_PREFIX + json.dumps(result.__dict__), flush=True)


def worker_command(row: str, steps: int, seed: int, threads: int, choice: EnvChoice, profile: bool) -> list[str]:
    """The command line that runs ``row`` alone in a fresh Python process, on the same env."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", row, "--steps", str(steps),
               "--seed", str(seed), "--threads", str(threads), "--env-id", choice.env_id,
               "--num-envs", str(choice.num_envs)]
    if choice.frame_size is not None:
        command += ["--frame-size", str(choice.frame_size)]
    return command + (["--profile-worker"] if profile else [])


def spawn(row: str, steps: int, seed: int, threads: int, profile: bool = False,
          choice: EnvChoice = EnvChoice()) -> Measurement | None:
    """Run ``row`` in a fresh Python subprocess; None (after printing its error) if it failed."""
    command = worker_command(row, steps, seed, threads, choice, profile)
    done = subprocess.run(command, capture_output=True, text=True, env=thread_env(threads), cwd=_common.REPO_ROOT)
    lines = done.stdout.splitlines()
    if profile:
        print("\n".join(line for line in lines if not line.startswith(RESULT_PREFIX)))
    results = [line[len(RESULT_PREFIX):] for line in lines if line.startswith(RESULT_PREFIX)]
    if done.returncode != 0 or not results:
        print(f"row '{row}' failed (exit {done.returncode}):\n{done.stderr[-3000:]}", file=sys.stderr)
        return None
    return Measurement(**json.loads(results[-1]))


def summary_rows(results: dict[str, list[Measurement]], stat: str = "best") -> list[list[object]]:
    """One table row per benchmark row; ``stat`` over repeats is ``best`` (highest SPS) or ``median``.

    ratio = SPS / SB3's SPS.
    """
    pick = max if stat == "best" else statistics.median

    def statistic(measurements: list[Measurement], kind: str) -> float:
        seconds = {"wall": lambda m: m.timed_seconds, "cpu": lambda m: m.timed_cpu_seconds}
        if kind == "total":
            return pick([sps(m.total_steps, m.total_seconds) for m in measurements])
        return pick([sps(m.timed_steps, seconds[kind](m)) for m in measurements])

    reference = {
        kind: statistic(results["sb3"], kind) if results.get("sb3") else float("nan") for kind in ("wall", "cpu")
    }
    table = []
    for row, measurements in results.items():
        if not measurements:
            continue
        steady, per_cpu = statistic(measurements, "wall"), statistic(measurements, "cpu")
        table.append([
            "stable-baselines3" if row == "sb3" else "wanderlust",
            "-" if row == "sb3" else row,
            measurements[0].timed_steps,
            (min if stat == "best" else statistics.median)([m.timed_seconds for m in measurements]),
            steady,
            steady / reference["wall"],
            statistic(measurements, "total"),
            per_cpu,
            per_cpu / reference["cpu"],
            measurements[0].parameters,
        ])
    return table


HEADERS = ["implementation", "novelty", "steps", "seconds", "SPS", "ratio to SB3", "SPS incl. start-up",
           "steps per CPU-s", "CPU ratio to SB3", "policy params"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", choices=tuple(ENVS), default="maze",
                        help="the game: " + ", ".join(f"{name} = {env_id}" for name, env_id in ENVS.items()))
    parser.add_argument("--env-id", help="any Gymnasium id instead of --env (its family preset's preprocessing)")
    parser.add_argument("--num-envs", type=int, default=EnvChoice.num_envs, help="N envs in both implementations")
    parser.add_argument("--frame-size", type=int, help="square frame size the policy sees (default: the preset's)")
    parser.add_argument("--steps", type=int, default=None, help=f"env steps per row (default {DEFAULT_STEPS:,})")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_STEPS:,} steps per row (~30-40 s in all)")
    parser.add_argument("--threads", type=int, default=default_threads(),
                        help="torch threads in every row (default: all cores)")
    parser.add_argument("--repeats", type=int, default=1, help="measure every row this many times (order alternates)")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated subset of {','.join(ROWS)}")
    parser.add_argument("--stat", choices=("best", "median"), default="best",
                        help="statistic over repeats (best: least disturbed by other load, as timeit)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", metavar="ROW",
                        help="cProfile one row (sb3 or a novelty name) and print the top functions")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--profile-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.steps = args.steps if args.steps is not None else (QUICK_STEPS if args.quick else DEFAULT_STEPS)
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    bad = [r for r in rows + ([args.profile] if args.profile else []) if r not in ROWS]
    if bad:
        parser.error(f"unknown row(s) {', '.join(bad)}; choose from {', '.join(ROWS)}")
    if args.num_envs < 1 or (args.frame_size is not None and args.frame_size < 36):
        parser.error("--num-envs must be >= 1 and --frame-size >= 36 (the Nature CNN's smallest input)")
    batch = args.num_envs * 128
    if args.steps < 2 * batch:
        parser.error(f"--steps must be >= {2 * batch:,} (two updates of {args.num_envs} envs x 128 steps: "
                     "the first one is start-up)")
    if args.threads < 1 or args.repeats < 1:
        parser.error("--threads and --repeats must be >= 1")
    args.rows = rows
    args.choice = EnvChoice(args.env_id or ENVS[args.env], args.num_envs, args.frame_size)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        worker(args.worker, args.steps, args.seed, args.threads, args.profile_worker, args.choice)
        return 0
    if args.profile:
        print(f"# cProfile of '{args.profile}', {args.steps:,} steps, {args.threads} torch thread(s)\n")
        measurement = spawn(args.profile, args.steps, args.seed, args.threads, profile=True, choice=args.choice)
        return 0 if measurement is not None else 1

    print(f"# Training throughput: {describe(env_config(args.choice))}; {args.num_envs} envs x 128 steps, "
          f"4 epochs x 4 minibatches, Nature CNN; {args.steps:,} steps per row, {args.threads} torch thread(s), "
          f"{args.repeats} repeat(s)\n")
    results: dict[str, list[Measurement]] = {row: [] for row in args.rows}
    failed = False
    for repeat in range(args.repeats):
        for row in (args.rows if repeat % 2 == 0 else list(reversed(args.rows))):
            began = time.perf_counter()
            measurement = spawn(row, args.steps, args.seed, args.threads, choice=args.choice)
            print(f"  {row:<9} repeat {repeat + 1}: "
                  + (f"{sps(measurement.timed_steps, measurement.timed_seconds):7.1f} SPS" if measurement else "FAILED")
                  + f"  ({time.perf_counter() - began:.1f} s wall)", flush=True)
            failed |= measurement is None
            if measurement is not None and measurement.torch_threads != args.threads:
                print(f"  warning: row '{row}' trained with {measurement.torch_threads} torch threads, "
                      f"not {args.threads}")
            if measurement is not None:
                results[row].append(measurement)

    shapes = {tuple(m.obs_shape) for measurements in results.values() for m in measurements}
    if len(shapes) > 1:
        print(f"error: the rows trained on different observation shapes {sorted(shapes)}", file=sys.stderr)
        failed = True
    table = summary_rows(results, args.stat)
    print(f"\nSPS = env steps per second after the first update (learning included); {args.stat} of repeats."
          "\nsteps per CPU-s = the same steps per CPU second of the process (all threads): "
          "less sensitive to other load.\n")
    if shapes:
        print(f"observations: uint8 {list(next(iter(shapes)))} in every row\n")
    print(markdown_table(HEADERS, table))
    if results.get("sb3"):
        print()
        for line in (line for line in table if line[0] == "wanderlust"):
            if line[1] == "none":
                verdict = "meets" if line[5] >= 1.0 else "misses"
                print(f"wanderlust/none: {line[5]:.2f}x SB3 ({verdict} the target 'at least as fast as SB3')")
            else:
                print(f"wanderlust/{line[1]}: {line[5]:.2f}x SB3 (the cost of curiosity: work SB3 does not do)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
