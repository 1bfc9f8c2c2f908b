"""Many maze exploration runs at once: methods x seeds x variants of ``exploration.py``, in parallel.

Each job is one ``exploration.py`` process (one method, one seed, one variant's ``--set`` values,
``--threads 1``), so a machine with many cores (and a GPU: ``--set device=cuda``) trains many seeds
side by side. At ``--deadline-minutes`` every job still training gets SIGTERM: the run saves a
checkpoint of its last finished update, and ``exploration.py --evaluate`` evaluates that checkpoint,
so a stopped job still yields a row (with the steps it reached). The sweep then prints, per method
and variant, the mean over seeds (``exploration.py --summarize``), and writes every job's
``--json`` file and log under ``--out``.

    python benchmarks/sweep.py --methods episodic,rnd --seeds 1,2,3 --variant hold8 noise_hold=8 \\
        --variant hold1 noise_hold=1 --steps 300000 --parallel 12 --out /tmp/sweep
    python benchmarks/sweep.py ... --set device=cuda        # every job learns on the GPU
    python benchmarks/sweep.py --methods coverage-reward,episodic ...   # next to the privileged ceiling
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import _common  # noqa: F401  (puts <repo>/src on sys.path)
from _common import markdown_table, thread_env
from exploration import summarize

HERE = Path(__file__).resolve().parent


@dataclass
class Job:
    """One exploration.py run: a method, a seed and a variant (named ``--set`` values)."""

    method: str
    seed: int
    variant: str
    overrides: list[str]
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = f"{self.method}-{self.variant}-seed{self.seed}" if self.variant else f"{self.method}-seed{self.seed}"


def make_jobs(methods: list[str], seeds: list[int], variants: list[tuple[str, list[str]]],
              common: list[str]) -> list[Job]:
    """Every method x variant x seed, seeds innermost (so the first seeds of every variant start first)."""
    variants = variants or [("", [])]
    return [Job(m, s, name, [*common, *sets]) for name, sets in variants for m in methods for s in seeds]


COVERAGE_REWARD = "coverage-reward"
"""The method name that runs ``coverage_reward.py`` (PPO paid +1 per new cell: the privileged ceiling)."""


def exploration_command(job: Job, args: argparse.Namespace, out: Path) -> list[str]:
    """The exploration.py (or coverage_reward.py) command line that trains and evaluates ``job``."""
    common = ["--seed", str(job.seed), "--steps", str(args.steps), "--episodes", str(args.episodes),
              "--episode-steps", str(args.episode_steps), "--threads", "1", "--json", str(out / f"{job.name}.json")]
    if job.method == COVERAGE_REWARD:
        command = [sys.executable, str(HERE / "coverage_reward.py"), *common,
                   "--keep-run", str(out / "runs" / job.name / f"{job.method}-seed{job.seed}")]
    else:
        command = [sys.executable, str(HERE / "exploration.py"), "--methods", job.method, *common,
                   "--keep-runs", str(out / "runs" / job.name)]
    for override in job.overrides:
        command += ["--set", override]
    return command


def label_rows(results: list[dict], variant: str) -> list[dict]:
    """Name a job's trained and untrained rows after its variant (``episodic [hold8]``), so the
    summary keeps variants apart; the scripted baselines keep their names."""
    if not variant:
        return results
    scripted = {"random", "held-random", "corridor", "oracle"}
    return [r if r["method"] in scripted else {**r, "method": f"{r['method']} [{variant}]"} for r in results]


def run_jobs(jobs: list[Job], args: argparse.Namespace, out: Path) -> dict[str, str]:
    """Run the jobs, ``args.parallel`` at a time, until done or the deadline; returns each job's end
    ('done', 'stopped' or 'failed (exit N)')."""
    deadline = time.monotonic() + args.deadline_minutes * 60 if args.deadline_minutes else None
    waiting, running, ends, signalled = list(jobs), {}, {}, False
    (out / "logs").mkdir(parents=True, exist_ok=True)
    while waiting or running:
        while waiting and len(running) < args.parallel and (deadline is None or time.monotonic() < deadline):
            job = waiting.pop(0)
            log = (out / "logs" / f"{job.name}.log").open("w")
            running[job.name] = (job, subprocess.Popen(exploration_command(job, args, out), stdout=log,
                                                       stderr=subprocess.STDOUT, env=thread_env(1)), log)
            print(f"  started {job.name}", flush=True)
        if deadline is not None and time.monotonic() >= deadline:
            for job in waiting:
                ends[job.name] = "not started"
            waiting = []
            for _, process, _ in running.values():
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            deadline, signalled = None, True  # signalled once; now wait for the checkpoints
        for name, (job, process, log) in list(running.items()):
            code = process.poll()
            if code is None:
                continue
            log.close()
            del running[name]
            done = (out / f"{name}.json").is_file()
            ends[name] = "done" if done else ("stopped" if signalled else f"failed (exit {code})")
            print(f"  {name}: {ends[name]}", flush=True)
        time.sleep(0.5)
    return ends


def evaluate_command(job: Job, args: argparse.Namespace, out: Path) -> list[str] | None:
    """``exploration.py --evaluate`` on a stopped job's kept run; None if it left no checkpoint to evaluate."""
    run_dir = out / "runs" / job.name / f"{job.method}-seed{job.seed}"
    if job.method == COVERAGE_REWARD or not any(run_dir.glob("checkpoints/ckpt-*")):  # its env id lives in its script
        return None
    return [sys.executable, str(HERE / "exploration.py"), "--evaluate", str(run_dir), "--episodes",
            str(args.episodes), "--episode-steps", str(args.episode_steps), "--threads", "1",
            "--json", str(out / f"{job.name}.json")]


def evaluate_stopped(jobs: list[Job], ends: dict[str, str], args: argparse.Namespace, out: Path) -> None:
    """Evaluate the checkpoints of the stopped jobs, ``args.parallel`` at a time; marks them in ``ends``."""
    pending = [(job, command) for job in jobs if ends[job.name] == "stopped"
               for command in [evaluate_command(job, args, out)] if command is not None]
    while pending:
        batch, pending = pending[:args.parallel], pending[args.parallel:]
        processes = []
        for job, command in batch:
            log = (out / "logs" / f"{job.name}.log").open("a")
            processes.append((job, subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=thread_env(1)),
                              log))
        for job, process, log in processes:
            if process.wait() == 0:
                ends[job.name] = "stopped, checkpoint evaluated"
            log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", default="episodic",
                        help=f"comma-separated novelty modules, or {COVERAGE_REWARD} (coverage_reward.py)")
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated training seeds")
    parser.add_argument("--variant", nargs="+", action="append", default=[], metavar=("NAME", "KEY=VALUE"),
                        help="a named set of config overrides, e.g. --variant hold8 noise_hold=8 (repeatable)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override for every job")
    parser.add_argument("--steps", type=int, default=300_000, help="training steps per job")
    parser.add_argument("--episodes", type=int, default=5, help="evaluation episodes per job")
    parser.add_argument("--episode-steps", type=int, default=1000, help="steps per evaluation episode")
    parser.add_argument("--parallel", type=int, default=2, help="jobs at a time (one core each)")
    parser.add_argument("--deadline-minutes", type=float, default=0.0,
                        help="stop every job still training after this long and evaluate its checkpoint (0: none)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the jobs' --json files, logs and runs")
    args = parser.parse_args()
    if min(args.parallel, args.steps, args.episodes, args.episode_steps) < 1:
        parser.error("--parallel, --steps, --episodes and --episode-steps must be positive")
    variants = [(v[0], v[1:]) for v in args.variant]
    if len({name for name, _ in variants}) != len(variants):
        parser.error("variant names must differ")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    jobs = make_jobs(methods, seeds, variants, args.set)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    ends = run_jobs(jobs, args, args.out)
    evaluate_stopped(jobs, ends, args, args.out)
    results = []
    for job in jobs:
        path = args.out / f"{job.name}.json"
        if path.is_file():
            results.append(label_rows(json.loads(path.read_text()), job.variant))
    print(f"\n{len(jobs)} jobs in {(time.monotonic() - started) / 60:.1f} min; {args.steps:,} steps each\n")
    print(markdown_table(["job", "end", "steps trained", "coverage"], [
        [job.name, ends[job.name], *_trained(args.out / f"{job.name}.json")] for job in jobs]))
    if results:
        print("\nmean over seeds (each job against its own random row)\n")
        print(markdown_table(["method", "runs", "mean coverage", "worst run", "best run", "vs random",
                              "runs >= 2x random"], summarize(results)))


def _trained(path: Path) -> list[str]:
    """``[steps trained, coverage]`` of a job's trained row, or blanks when it has no file."""
    if not path.is_file():
        return ["", ""]
    row = [r for r in json.loads(path.read_text()) if "seed" in r and r["train_steps"] > 0]
    if not row:
        return ["", ""]
    coverages = row[-1]["coverages"]
    return [f"{row[-1]['train_steps']:,}", f"{sum(coverages) / len(coverages):.1%}"]


if __name__ == "__main__":
    main()
