"""The command line: defaults, one-line errors that lose nothing, play/eval/doctor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wanderlust.cli import main

TINY = ["--preset", "quick", "--set", "env.maze_size=5", "--set", "env.maze_obs_size=40", "--set", "env.frame_stack=2",
        "--num-steps", "16", "--no-progress"]


def run_cli(*args: str) -> int:
    return main(list(args))


def test_train_play_eval_round_trip(tmp_path, capsys):
    run = tmp_path / "run"
    assert run_cli("train", *TINY, "--total-steps", "64", "--novelty", "pixel", "--run-dir", str(run)) == 0
    config = json.loads((run / "config.json").read_text())
    assert config["novelty_name"] == "pixel" and config["total_steps"] == 64
    assert config["env"]["env_id"] == "wanderlust/Maze-v0"
    capsys.readouterr()
    assert run_cli("eval", str(run), "--episodes", "2") == 0
    out = capsys.readouterr().out
    assert "2 episodes" in out and "mean coverage" in out
    video = tmp_path / "episode.mp4"
    assert run_cli("play", str(run), "--video", str(video)) == 0
    assert video.stat().st_size > 1000
    assert video.read_bytes()[4:8] == b"ftyp"  # an MP4 container


def test_existing_run_folder_is_refused_and_kept(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    keep = run / "notes.txt"
    keep.write_text("mine")
    assert run_cli("train", *TINY, "--total-steps", "32", "--run-dir", str(run)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--resume" in err[0]
    assert keep.read_text() == "mine" and sorted(p.name for p in run.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize(
    "args, expected",
    [
        (["train", "wanderlust/Maze-v1"], "did you mean 'wanderlust/Maze-v0'"),
        (["train", "--novelty", "curious"], "unknown novelty 'curious'"),
        (["train", "--total-steps", "0"], "total_steps must be a positive integer"),
        (["train", "--num-envs", "-2"], "num_envs must be a positive integer"),
        (["train", "--set", "ppo.learning_rat=1"], "unknown config key 'ppo.learning_rat'"),
        (["train", "--set", "ppo.clip_coef=abc"], "bad value for ppo.clip_coef"),
        (["train", "--resume"], "--resume needs --run-dir"),
    ],
)
def test_bad_input_is_one_clear_line(args, expected, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli(*args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert expected in err[0]
    assert not (tmp_path / "runs").exists()  # nothing created for a refused run


def test_corrupt_latest_checkpoint_falls_back_and_foreign_one_is_refused(tmp_path, capsys):
    run = tmp_path / "run"
    assert run_cli("train", *TINY, "--total-steps", "64", "--set", "checkpoint_every=32", "--run-dir", str(run)) == 0
    checkpoints = sorted((run / "checkpoints").glob("ckpt-*"))
    assert len(checkpoints) == 2
    tensors = checkpoints[-1] / "tensors.safetensors"
    data = bytearray(tensors.read_bytes())
    data[-10:] = bytes(b ^ 0xFF for b in data[-10:])
    tensors.write_bytes(bytes(data))
    with pytest.warns(UserWarning):
        assert run_cli("eval", str(run), "--episodes", "1") == 0
    assert tensors.exists()  # nothing deleted
    for checkpoint in checkpoints:
        (checkpoint / "manifest.json").write_text('{"format": "something-else"}')
    assert run_cli("eval", str(run), "--episodes", "1") == 2
    assert "checkpoint" in capsys.readouterr().err


def test_doctor_passes_for_the_agent_and_flags_the_original_loop(capsys):
    assert run_cli("doctor", "--check-original", "--novelty", "rnd") == 0
    out = capsys.readouterr().out
    assert "get finite, non-zero gradients" in out
    assert "unchanged by learning" in out
    assert "no gradient reaches any of the" in out and "log pi(a|s)" in out


def test_sigterm_saves_a_checkpoint_and_exits_130(tmp_path):
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "wanderlust.cli", "train", *TINY, "--total-steps", "100000", "--run-dir", str(run)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.time() + 120  # a loaded 2-core machine imports torch slowly
    metrics = run / "metrics.jsonl"
    while time.time() < deadline and proc.poll() is None and not (metrics.exists() and metrics.read_text().strip()):
        time.sleep(0.2)
    assert proc.poll() is None and metrics.read_text().strip(), "training did not log an update"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "checkpoint saved" in err
    assert list((run / "checkpoints").glob("ckpt-*"))


def test_resume_extends_a_run_and_records_the_new_budget(tmp_path):
    run = tmp_path / "run"
    assert run_cli("train", *TINY, "--total-steps", "32", "--run-dir", str(run)) == 0
    assert run_cli("train", "--run-dir", str(run), "--resume", "--total-steps", "64", "--no-progress") == 0
    assert json.loads((run / "config.json").read_text())["total_steps"] == 64
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == [32, 64]


def test_failed_setup_leaves_no_run_folder_and_the_same_run_dir_works_after_the_fix(tmp_path, capsys):
    run = tmp_path / "run"
    bad = ["--set", "novelty.pixel.aggregate=median"]
    assert run_cli("train", *TINY, "--total-steps", "32", "--novelty", "pixel", *bad, "--run-dir", str(run)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "novelty.pixel.aggregate must be one of mean, nearest, got 'median'" in err[-1]
    assert not run.exists()  # nothing was trained, so nothing is left to refuse the next try
    fixed = ["--set", "novelty.pixel.aggregate=nearest"]
    assert run_cli("train", *TINY, "--total-steps", "32", "--novelty", "pixel", *fixed, "--run-dir", str(run)) == 0
    assert json.loads((run / "config.json").read_text())["novelty"]["pixel"]["aggregate"] == "nearest"
    assert (run / "checkpoints" / "latest").exists()
