"""Command line: ``wanderlust train | play | eval | report | doctor | envs``.

Errors that the user can fix are printed as one line (``wanderlust: error: ...``) with exit code 2;
set WANDERLUST_DEBUG=1 to see the traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from wanderlust.runtime.config import PRESETS, SCREEN_ID, TrainConfig, apply_overrides, make_preset, set_by_path

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _add_train_parser(sub) -> None:
    p = sub.add_parser("train", help="train a curiosity agent (default: the built-in maze)")
    p.add_argument("env_id", nargs="?", default=None, help="Gymnasium id (default wanderlust/Maze-v0)")
    p.add_argument("--preset", default="default", help=f"starting config: {', '.join(PRESETS)}")
    p.add_argument("--novelty", help="pixel | rnd | icm | episodic | none")
    p.add_argument("--total-steps", type=int, help="environment steps to train for")
    p.add_argument("--num-envs", type=int, help="parallel environments")
    p.add_argument("--num-steps", type=int, help="rollout length per env (T)")
    p.add_argument("--seed", type=int)
    p.add_argument("--encoder", help="nature | impala | seed")
    p.add_argument("--device", help="cpu | cuda | auto")
    p.add_argument("--run-dir", type=Path, help="run folder (default runs/<env>__<novelty>__<seed>__<time>)")
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir from its latest checkpoint")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config field, e.g. --set ppo.learning_rate=1e-4 (repeatable)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    scale = p.add_argument_group("scale out (see docs/ray.md)")
    scale.add_argument("--workers", type=int, help="rollout workers, each with its share of the envs (local processes)")
    scale.add_argument("--ray", metavar="ADDRESS",
                       help="run the workers as Ray actors: 'local' (a private loopback cluster) or HOST:PORT")
    scale.add_argument("--ray-dashboard", action="store_true", help="with --ray local: Ray's dashboard on 127.0.0.1")
    live = p.add_argument_group("live game (env id 'screen'; see docs/play-your-own-game.md)")
    live.add_argument("--window", help="capture the window whose title contains this text")
    live.add_argument("--window-class", help="or the window whose WM_CLASS contains this text")
    live.add_argument("--region", help="or the screen region x,y,w,h")
    live.add_argument("--monitor", type=int, help="or this monitor (1 = primary; the default)")
    live.add_argument("--input", choices=("keyboard", "gamepad"), help="keyboard+mouse (XTest on Linux, pynput/SendInput on Windows) or a virtual X360 pad")
    live.add_argument("--mapping", help="keyboard mapping file (JSON/TOML); default WASD + mouse look")
    live.add_argument("--stop-key", help="hotkey that stops the agent and releases all inputs (default F12)")
    live.add_argument("--hz", type=float, help="control rate in steps per second (default 15)")
    live.add_argument("--episode-seconds", type=float, help="episode length in seconds (default 300)")


def _add_run_parsers(sub) -> None:
    p = sub.add_parser("play", help="run a trained policy")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--env", help="play on another env id than the one trained on")
    p.add_argument("--episodes", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--video", type=Path, help="write the first episode to this .mp4 file")
    p.add_argument("--deterministic", action="store_true", help="take the most likely action instead of sampling")
    p.add_argument("--show", action="store_true",
                   help="watch live in a browser: a page on 127.0.0.1 with the frames, sticks and novelty")
    p.add_argument("--show-port", type=int, default=0, help="port of the --show page (default 0: any free port)")
    p.add_argument("--show-fps", type=float, default=15.0, help="--show plays at this many steps/s (0: full speed)")

    p = sub.add_parser("eval", help="mean coverage / return of a trained policy over seeded episodes")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--env", help="evaluate on another env id than the one trained on")
    p.add_argument("--episodes", type=int, default=5)
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument("--deterministic", action="store_true")

    p = sub.add_parser("report", help="write report.html: learning curves, coverage maps, novel frames, an episode")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--episodes", type=int, default=3, help="evaluation episodes to play for the maps")
    p.add_argument("--seed", type=int, default=1000, help="seed of the first evaluation episode")
    p.add_argument("--out", type=Path, help="where to write the page (default RUN_DIR/report.html)")

    p = sub.add_parser("doctor", help="check that learning can work here: gradients, torch, env, machine")
    p.add_argument("env_id", nargs="?", default=None)
    p.add_argument("--novelty", default=None)
    p.add_argument("--encoder", default=None)
    p.add_argument("--check-original", action="store_true",
                   help="also run the original agent's loss (novelty of a screenshot) and show why it cannot learn")

    sub.add_parser("envs", help="list the env ids wanderlust can train on here")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="wanderlust", description="Curiosity-driven exploration from pixels.")
    sub = parser.add_subparsers(dest="command")
    _add_train_parser(sub)
    _add_run_parsers(sub)
    return parser


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    config = make_preset(args.preset, args.novelty)
    if args.env_id:
        config.env.env_id = args.env_id
    _apply_screen_args(config, args)
    for value, path in (
        (args.total_steps, "total_steps"), (args.num_envs, "env.num_envs"),
        (args.num_steps, "ppo.num_steps"), (args.seed, "seed"), (args.encoder, "encoder"), (args.device, "device"),
    ):
        if value is not None:
            set_by_path(config, path, str(value))
    apply_overrides(config, args.set)
    _apply_scale_args(config, args)
    config.validate()
    return config


def _apply_scale_args(config: TrainConfig, args: argparse.Namespace) -> None:
    """--workers / --ray / --ray-dashboard (they may also change on --resume: the learner does not depend on them)."""
    if args.workers is not None:
        set_by_path(config, "workers", str(args.workers))
    if args.ray is not None:
        config.ray_address = args.ray
    if args.ray_dashboard:
        config.ray_dashboard = True


SCREEN_ARGS = ("window", "window_class", "region", "monitor", "input", "mapping", "stop_key", "hz", "episode_seconds")


def _apply_screen_args(config: TrainConfig, args: argparse.Namespace) -> None:
    given = [name for name in SCREEN_ARGS if getattr(args, name) is not None]
    if config.env.env_id != SCREEN_ID:
        if given:
            raise ValueError(f"--{given[0].replace('_', '-')} is for live games: use 'wanderlust train screen ...'")
        return
    config.env.num_envs = 1  # one live game; --num-envs can still say so explicitly
    for name in given:
        setattr(config.env.screen, name, getattr(args, name))


def cmd_train(args: argparse.Namespace) -> int:
    from wanderlust.algo.trainer import train
    from wanderlust.envs.factory import ensure_registered, make_env
    from wanderlust.runtime.rundir import create_run_dir, load_config, save_config

    if args.resume:
        if args.run_dir is None:
            raise ValueError("--resume needs --run-dir RUN_DIR (the run to continue)")
        changed = [name for name in ("env_id", "novelty", "num_envs", "num_steps", "seed", "encoder") if getattr(args, name)]
        if changed or args.set or args.preset != "default":
            raise ValueError(f"--resume continues the saved config; drop {', '.join(changed) or '--set/--preset'} "
                             "(only --total-steps, --device, --workers and --ray may change)")
        config = TrainConfig.from_dict(load_config(args.run_dir))
        if args.total_steps is not None:
            set_by_path(config, "total_steps", str(args.total_steps))
        if args.device is not None:
            config.device = args.device
        _apply_scale_args(config, args)
        config.validate()
        run_dir = create_run_dir(args.run_dir, name_parts=(), resume=True)
        save_config(run_dir, config.to_dict())  # records a changed --total-steps / --device
    else:
        config = config_from_args(args)
        if config.env.env_id != SCREEN_ID:
            ensure_registered(config.env.env_id)
        run_dir = None
    if config.env.env_id == SCREEN_ID:
        # Find the window and start the input device before anything is written: a missing window
        # or gamepad driver is a one-line error that leaves no run folder behind.
        env = make_env(config.env)
        try:
            run_dir = run_dir or _new_run_dir(config, args)
        except BaseException:
            env.close()
            raise
        with _discarded_if_untrained(run_dir, new=not args.resume):
            return _train_live(config, env, run_dir, args)
    run_dir = run_dir or _new_run_dir(config, args)
    with _discarded_if_untrained(run_dir, new=not args.resume):
        result = train(config, run_dir, resume=args.resume, show_progress=not args.no_progress)
    coverage = result.last_metrics.get("charts/coverage")
    tail = f", coverage {coverage:.1%}" if coverage is not None else ""
    if result.interrupted:
        print(f"wanderlust: interrupted at step {result.global_step:,}; checkpoint saved. "
              f"Continue with: wanderlust train --run-dir {run_dir} --resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"wanderlust: done, {result.global_step:,} steps{tail}. Run folder: {run_dir}", file=sys.stderr)
    return 0


@contextmanager
def _discarded_if_untrained(run_dir: Path, new: bool) -> Iterator[None]:
    """On an error before anything was saved, remove the folder this command just made (see
    ``discard_untrained_run``); a resumed run's folder is never touched."""
    from wanderlust.runtime.rundir import discard_untrained_run

    try:
        yield
    except BaseException:
        if new:
            discard_untrained_run(run_dir)
        raise


def _new_run_dir(config: TrainConfig, args: argparse.Namespace) -> Path:
    """Create the run folder (refusing an existing one), save the resolved config, say what runs."""
    from wanderlust.runtime.rundir import create_run_dir, save_config

    run_dir = create_run_dir(args.run_dir, name_parts=(config.env.env_id, config.novelty_name, str(config.seed)),
                             resume=False)
    save_config(run_dir, config.to_dict())
    print(f"wanderlust: training {config.env.env_id} with {config.novelty_name} novelty for "
          f"{config.total_steps:,} steps -> {run_dir}", file=sys.stderr)
    return run_dir


def _train_live(config: TrainConfig, env, run_dir: Path, args: argparse.Namespace) -> int:
    """A live game: the real-time runner (actor at the control rate, learner beside it); it closes
    ``env`` on every path, which releases every input."""
    from wanderlust.algo.realtime import train_realtime

    print(f"wanderlust: live at {config.env.screen.hz:g} Hz; press {config.env.screen.stop_key} to stop",
          file=sys.stderr)
    result = train_realtime(config, env, run_dir, resume=args.resume, show_progress=not args.no_progress)
    summary = (f"{result.global_step:,} steps, actor {result.actor_hz:.1f} Hz, {result.late_steps} late steps, "
               f"{result.dropped_rollouts} rollouts dropped")
    if result.stopped_by == "interrupt":
        print(f"wanderlust: interrupted after {summary}; checkpoint saved. "
              f"Continue with: wanderlust train --run-dir {run_dir} --resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"wanderlust: stopped by {result.stopped_by} after {summary}. Run folder: {run_dir}", file=sys.stderr)
    return 0


def _policy_for(args: argparse.Namespace):
    from wanderlust.algo.evaluate import load_policy
    from wanderlust.envs.factory import ensure_registered

    config, agent = load_policy(args.run_dir)
    if args.env:
        ensure_registered(args.env)
        config.env.env_id = args.env
    return config, agent


def cmd_play(args: argparse.Namespace) -> int:
    from wanderlust.algo.evaluate import run_episodes

    if args.show:
        return _play_shown(args)
    config, agent = _policy_for(args)
    result = run_episodes(config, agent, args.episodes, args.seed, args.deterministic, args.video)
    for i, episode in enumerate(result.episodes):
        coverage = f", coverage {episode.coverage:.1%}" if episode.coverage is not None else ""
        print(f"episode {i}: {episode.steps} steps, return {episode.episode_return:.2f}{coverage}")
    if args.video:
        print(f"video: {args.video}")
    return 0


def _play_shown(args: argparse.Namespace) -> int:
    """``play --show``: the live page on 127.0.0.1 while the episodes play."""
    from wanderlust.envs.factory import ensure_registered
    from wanderlust.report.live import play_live

    if args.video:
        raise ValueError("--video and --show cannot be combined; record the video in a separate 'play' run")
    if args.env:
        ensure_registered(args.env)
    played = play_live(args.run_dir, args.episodes, args.seed, args.deterministic, args.show_port, args.show_fps,
                       args.env, on_ready=lambda url: print(f"live view: {url}", flush=True))
    for i, episode in enumerate(played):
        coverage = f", coverage {episode.coverage:.1%}" if episode.coverage is not None else ""
        print(f"episode {i}: {episode.steps} steps, return {episode.episode_return:.2f}{coverage}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    import time

    from wanderlust.report.build import write_report

    start = time.perf_counter()
    path = write_report(args.run_dir, args.out, args.episodes, args.seed)
    print(f"wanderlust: report written in {time.perf_counter() - start:.1f} s "
          f"({path.stat().st_size / 1e6:.2f} MB)", file=sys.stderr)
    print(path)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from wanderlust.algo.evaluate import run_episodes

    config, agent = _policy_for(args)
    result = run_episodes(config, agent, args.episodes, args.seed, args.deterministic)
    line = f"{config.env.env_id}: {len(result.episodes)} episodes, mean return {result.mean_return:.3f}"
    if result.mean_coverage is not None:
        line += f", mean coverage {result.mean_coverage:.1%}"
    print(line)
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    import numpy as np
    from torch import nn

    from wanderlust import doctor

    for key, value in doctor.machine_report().items():
        print(f"{key:>16}: {value}")
    config = make_preset("quick", args.novelty)
    if args.env_id:
        config.env.env_id = args.env_id
    if args.encoder:
        set_by_path(config, "encoder", args.encoder)
    config.validate()
    report, novelty_checks = doctor.agent_gradient_report(config)
    print(f"{'env':>16}: {config.env.env_id} steps fine")
    for key, value in novelty_checks.items():
        print(f"{key:>16}: {value}")
    print(f"{'gradients':>16}: {report.summary}")
    for name, why in report.problems.items():
        print(f"{'':>16}  {name}: {why}")
    healthy = report.ok and "CHANGED" not in " ".join(novelty_checks.values())
    if args.check_original:
        from wanderlust.envs.factory import make_env

        env = make_env(config.env)
        frames = [env.reset(seed=0)[0][-3:].transpose(1, 2, 0)]
        for _ in range(3):
            frames.append(env.step(env.action_space.sample())[0][-3:].transpose(1, 2, 0))
        env.close()
        h, w = frames[0].shape[:2]
        seed_model = nn.Sequential(nn.Flatten(), nn.Linear(3 * h * w, 128), nn.Linear(128, 4))
        original = doctor.gradient_report(seed_model.named_parameters(),
                                          doctor.original_agent_loss(seed_model, frames[-1], frames[:-1]))
        print(f"{'original loop':>16}: {original.summary}")
    print("doctor: OK" if healthy else "doctor: PROBLEMS found (see above)")
    return 0 if healthy else 1


def cmd_envs(_: argparse.Namespace) -> int:
    import gymnasium as gym

    from wanderlust.envs.factory import load_all_plugins

    load_all_plugins()
    for env_id in sorted(gym.registry):
        print(env_id)
    return 0


COMMANDS = {"train": cmd_train, "play": cmd_play, "eval": cmd_eval, "report": cmd_report, "doctor": cmd_doctor,
            "envs": cmd_envs}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        argv = ["train"]
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["train", *argv])
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("wanderlust: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (ValueError, FileNotFoundError, RuntimeError) as error:
        if os.environ.get("WANDERLUST_DEBUG"):
            raise
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"wanderlust: error: {message}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
