"""Memory over a long training run: resident set size (RSS) at 10%, 50% and 100% of the steps.

Trains wanderlust on ``wanderlust/Maze-v0`` with the config ``wanderlust train`` uses (the
``default`` preset; ``--preset`` picks another) into a temporary run folder and reads ``VmRSS``
from ``/proc/self/status`` after every update through ``train(..., on_update=...)``. Before each
reading, ``gc.collect()`` and glibc's ``malloc_trim(0)`` return freed heap pages to the OS, so RSS
counts memory actually held (without it, RSS jumps by ~100 MiB between updates as large temporary
tensors come and go; ``--raw`` skips the trim).
A leak shows up as RSS that keeps growing after the warm-up; the target is
``RSS(100%) / RSS(10%) <= 1.10``. Checkpoints, TensorBoard and metrics logging stay at their
defaults, as in a real run.

    python benchmarks/memory.py            # 200,000 steps (long)
    python benchmarks/memory.py --quick    # 20,000 steps
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from _common import (
    default_threads, markdown_table, release_free_memory, rss_mib, set_torch_threads, slope, value_at_fraction,
)

if TYPE_CHECKING:
    from wanderlust.runtime.config import TrainConfig

DEFAULT_STEPS = 200_000
QUICK_STEPS = 20_000
TARGET_RATIO = 1.10
DECILES = tuple(i / 10 for i in range(1, 11))


def measure(
    config: TrainConfig, steps: int, seed: int, threads: int, trim: bool
) -> tuple[list[tuple[int, float]], float, float]:
    """Train ``steps`` env steps; returns ``(step, RSS MiB)`` after each update, the RSS before
    training (imports done) and the peak RSS (``VmHWM``), in MiB. ``trim``: release freed memory
    before each reading. ``config`` (a preset's) is changed in place."""
    from wanderlust.algo.trainer import train

    config.total_steps, config.seed, config.torch_threads = steps, seed, threads
    config.validate()
    points: list[tuple[int, float]] = []

    def read_rss() -> float:
        if trim:
            release_free_memory()
        return rss_mib()

    before = read_rss()
    with tempfile.TemporaryDirectory(prefix="wanderlust-memory-") as run_dir:
        train(config, Path(run_dir), show_progress=False,
              on_update=lambda learner, metrics: points.append((learner.global_step, read_rss())))
    return points, before, rss_mib("VmHWM")


def decile_rows(points: list[tuple[int, float]]) -> list[list[object]]:
    """Rows ``[progress, step, RSS MiB, MiB since previous row, MiB per 10k steps since previous row]``."""
    rows: list[list[object]] = []
    previous: tuple[int, float] | None = None
    for fraction in DECILES:
        step, rss = value_at_fraction(points, fraction)
        if previous is None or step == previous[0]:
            delta, per_10k = float("nan"), float("nan")
        else:
            delta = rss - previous[1]
            per_10k = delta / (step - previous[0]) * 10_000
        rows.append([f"{fraction:.0%}", step, rss, delta, per_10k])
        previous = (step, rss)
    return rows


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=None, help=f"env steps to train (default {DEFAULT_STEPS:,})")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_STEPS:,} steps")
    parser.add_argument("--novelty", default=None, help="novelty module (default: the preset's)")
    parser.add_argument("--preset", default="default", help="starting config (default: 'default', as wanderlust train)")
    parser.add_argument("--threads", type=int, default=default_threads(), help="torch threads (default: all cores)")
    parser.add_argument("--raw", action="store_true", help="read RSS without gc.collect() + malloc_trim(0) first")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    args.steps = args.steps if args.steps is not None else (QUICK_STEPS if args.quick else DEFAULT_STEPS)
    if args.steps < 10 * 1024:
        parser.error("--steps must be >= 10240 (ten updates of 8 envs x 128 steps, one per 10%)")
    if args.threads < 1:
        parser.error("--threads must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    set_torch_threads(args.threads)
    from wanderlust.runtime.config import make_preset

    try:
        preset = make_preset(args.preset, args.novelty)  # with that novelty's settings, as `wanderlust train`
    except ValueError as error:
        print(f"memory.py: {error}", file=sys.stderr)
        return 2
    reading = "raw VmRSS" if args.raw else "VmRSS after gc.collect() + malloc_trim(0)"
    print(f"# Memory: {preset.env.env_id}, preset '{args.preset}', novelty '{preset.novelty_name}', "
          f"{args.steps:,} steps, {args.threads} torch thread(s), {reading}\n", flush=True)
    began = time.perf_counter()
    points, before, peak = measure(preset, args.steps, args.seed, args.threads, trim=not args.raw)
    seconds = time.perf_counter() - began

    (step_10, rss_10), (step_50, rss_50), (step_100, rss_100) = (value_at_fraction(points, f) for f in (0.1, 0.5, 1.0))
    ratio = rss_100 / rss_10
    print(markdown_table(
        ["point", "step", "RSS MiB", "ratio to 10%"],
        [["10%", step_10, rss_10, 1.0], ["50%", step_50, rss_50, rss_50 / rss_10], ["100%", step_100, rss_100, ratio]],
    ))
    print(f"\nRSS before training (imports done): {before:.1f} MiB; peak (VmHWM): {peak:.1f} MiB; "
          f"{len(points)} updates in {seconds:.0f} s")
    print("\nRSS growth per 10k steps, between consecutive 10% marks:\n")
    headers = ["progress", "step", "RSS MiB", "MiB since previous", "MiB per 10k steps"]
    print(markdown_table(headers, decile_rows(points)))
    after_warmup = [p for p in points if p[0] >= step_10]
    print(f"\nLeast-squares growth from 10% to 100%: {slope(after_warmup) * 10_000:+.2f} MiB per 10k steps")
    verdict = "meets" if ratio <= TARGET_RATIO else "misses"
    print(f"RSS(100%) / RSS(10%) = {ratio:.3f} ({verdict} the target <= {TARGET_RATIO:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
