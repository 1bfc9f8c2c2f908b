"""Scaling rollouts out: training SPS with 1, 2 and 4 rollout workers, local processes vs Ray actors,
on the built-in maze and on VizDoom, against the single-process run.

Every row trains the same config (the ``default`` preset on the maze, ``icm-vizdoom`` on VizDoom; novelty
``none`` so that the rows differ only in how rollouts are collected) in a fresh subprocess:

- ``single``: ``workers=0``, the envs stepped in the learner's process (the reference);
- ``local``: ``--workers N``, one subprocess per worker;
- ``ray``: ``--workers N --ray local``, one Ray actor per worker on a private loopback cluster
  (started inside the row; cluster start-up and actor creation fall in the first update, which is
  not timed).

SPS = env steps per second after the first update, learning included (the learner idles while the
workers act and vice versa: collection is synchronous). ``overhead`` = the mean time per rollout that
the learner waited beyond the slowest worker's own collection: weight broadcast, pickling / object
store transfer of the frames, scheduling (``charts/rollout_overhead_ms``). ``MB`` = frames per rollout.

    python benchmarks/scaling.py                    # 6 updates per row (5 timed), both envs
    python benchmarks/scaling.py --quick            # 3 updates per row, smaller VizDoom batch (~5 min)
    python benchmarks/scaling.py --envs maze --workers 1,2
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import _common
from _common import default_threads, markdown_table, set_torch_threads, sps, thread_env

ENVS = ("maze", "vizdoom")
POOLS = ("single", "local", "ray")
RESULT_PREFIX = "SCALING_RESULT "


@dataclass
class Row:
    """One timed training run."""

    env: str
    """``maze`` or ``vizdoom``."""
    pool: str
    """``single``, ``local`` or ``ray``."""
    workers: int
    """Rollout workers (0 for ``single``)."""
    timed_steps: int
    """Env steps after the first update."""
    timed_seconds: float
    """Seconds from the end of the first update to the end of the last."""
    overhead_ms: float
    """Mean ``charts/rollout_overhead_ms`` over the timed updates (0 for ``single``)."""
    rollout_mb: float
    """Frames per rollout (T x N x C x H x W bytes) in MB."""
    restarts: int = 0
    """Workers replaced during the run (should be 0)."""


def bench_config(env: str, pool: str, workers: int, updates: int, quick: bool, seed: int, threads: int):
    from wanderlust.runtime.config import make_preset

    config = make_preset("default" if env == "maze" else "icm-vizdoom")
    if env == "vizdoom":
        config.env.env_id = "VizdoomMyWayHome-v1"  # the dense start: episodes end, as in training
        if quick:
            config.env.num_envs, config.ppo.num_steps = 8, 64
    config.novelty_name = "none"
    config.seed, config.torch_threads = seed, threads
    config.total_steps = updates * config.batch_size
    config.checkpoint_every = config.total_steps + 1  # only the final checkpoint, after timing stops
    config.workers = 0 if pool == "single" else workers
    config.ray_address = "local" if pool == "ray" else None
    config.validate()
    return config


def run_row(env: str, pool: str, workers: int, updates: int, quick: bool, seed: int, threads: int) -> Row:
    from wanderlust.algo.trainer import train

    config = bench_config(env, pool, workers, updates, quick, seed, threads)
    marks: list[tuple[int, float, float]] = []  # (global_step, time, overhead ms) after each update
    seen: dict = {"restarts": 0}

    def on_update(learner, metrics) -> None:
        marks.append((learner.global_step, time.perf_counter(), metrics.get("charts/rollout_overhead_ms", 0.0)))
        seen["obs_shape"] = learner.agent.obs_shape
        seen["restarts"] = int(metrics.get("charts/worker_restarts", 0))

    with tempfile.TemporaryDirectory(prefix="wanderlust-scaling-") as run_dir:
        train(config, Path(run_dir), show_progress=False, on_update=on_update)
    (first_step, first_time, _), (last_step, last_time, _) = marks[0], marks[-1]
    frames = config.batch_size
    for size in seen["obs_shape"]:
        frames *= size
    return Row(env, pool, config.workers, last_step - first_step, last_time - first_time,
               statistics.fmean(m[2] for m in marks[1:]), frames / 1e6, seen["restarts"])


def worker(spec: str, updates: int, quick: bool, seed: int, threads: int) -> None:
    """Run one row (``env,pool,workers``) in this fresh process and print it as one JSON line."""
    env, pool, workers = spec.split(",")
    set_torch_threads(threads)
    row = run_row(env, pool, int(workers), updates, quick, seed, threads)
    print(RESULT_PREFIX + json.dumps(row.__dict__), flush=True)


def spawn(env: str, pool: str, workers: int, args: argparse.Namespace) -> Row | None:
    command = [sys.executable, str(Path(__file__).resolve()), "--row", f"{env},{pool},{workers}",
               "--updates", str(args.updates), "--seed", str(args.seed), "--threads", str(args.threads)]
    if args.quick:
        command.append("--quick")
    done = subprocess.run(command, capture_output=True, text=True, env=thread_env(args.threads), cwd=_common.REPO_ROOT)
    results = [line[len(RESULT_PREFIX):] for line in done.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if done.returncode != 0 or not results:
        print(f"row {env}/{pool}/{workers} failed (exit {done.returncode}):\n{done.stderr[-3000:]}", file=sys.stderr)
        return None
    return Row(**json.loads(results[-1]))


def table(rows: list[Row]) -> list[list[object]]:
    """One line per row; ratio = SPS / the single-process SPS on the same env."""
    reference = {row.env: sps(row.timed_steps, row.timed_seconds) for row in rows if row.pool == "single"}
    lines = []
    for row in rows:
        speed = sps(row.timed_steps, row.timed_seconds)
        lines.append([row.env, row.pool, row.workers, row.timed_steps, speed,
                      speed / reference.get(row.env, float("nan")), row.overhead_ms, row.rollout_mb, row.restarts])
    return lines


HEADERS = ["env", "pool", "workers", "timed steps", "SPS", "ratio to single", "overhead ms/rollout", "MB/rollout",
           "restarts"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 updates per row and 8 x 64 VizDoom rollouts")
    parser.add_argument("--updates", type=int, default=None, help="PPO updates per row (default 6, quick 3)")
    parser.add_argument("--envs", default=",".join(ENVS), help=f"comma-separated subset of {','.join(ENVS)}")
    parser.add_argument("--pools", default=",".join(POOLS), help=f"comma-separated subset of {','.join(POOLS)}")
    parser.add_argument("--workers", default="1,2,4", help="worker counts for the local and ray rows")
    parser.add_argument("--threads", type=int, default=default_threads(), help="torch threads of the learner")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--row", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.updates = args.updates if args.updates is not None else (3 if args.quick else 6)
    args.envs = [e.strip() for e in args.envs.split(",") if e.strip()]
    args.pools = [p.strip() for p in args.pools.split(",") if p.strip()]
    try:
        args.workers = [int(w) for w in args.workers.split(",") if w.strip()]
    except ValueError:
        parser.error(f"--workers must be comma-separated integers, got '{args.workers}'")
    bad = [e for e in args.envs if e not in ENVS] + [p for p in args.pools if p not in POOLS]
    if bad:
        parser.error(f"unknown env/pool {', '.join(bad)}; choose from {', '.join(ENVS + POOLS)}")
    if args.updates < 2:
        parser.error("--updates must be >= 2 (the first update is start-up and is not timed)")
    if args.threads < 1 or any(w < 1 for w in args.workers):
        parser.error("--threads and --workers must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.row:
        worker(args.row, args.updates, args.quick, args.seed, args.threads)
        return 0
    print(f"# Rollout scaling: {', '.join(args.envs)}; pools {', '.join(args.pools)}; workers {args.workers}; "
          f"{args.updates} updates per row (first not timed); learner with {args.threads} torch thread(s); "
          f"{default_threads()} cores\n")
    rows, failed = [], False
    for env in args.envs:
        plan = [(pool, 0) for pool in args.pools if pool == "single"]
        plan += [(pool, w) for pool in args.pools if pool != "single" for w in args.workers]
        for pool, workers in plan:
            began = time.perf_counter()
            row = spawn(env, pool, workers, args)
            print(f"  {env:<8} {pool:<6} {workers} worker(s): "
                  + (f"{sps(row.timed_steps, row.timed_seconds):7.1f} SPS" if row else "FAILED")
                  + f"  ({time.perf_counter() - began:.1f} s wall)", flush=True)
            failed |= row is None
            if row is not None:
                rows.append(row)
    print("\nSPS after the first update, learning included; overhead = waiting per rollout beyond the slowest "
          "worker's own collection time (transfer, pickling, scheduling).\n")
    print(markdown_table(HEADERS, table(rows)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
