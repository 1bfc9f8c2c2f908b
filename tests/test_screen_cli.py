"""`wanderlust train screen`: the real-time runner on the test game window under Xvfb."""

from __future__ import annotations

import json

from screen_fixtures import game, keys_down, xvfb  # noqa: F401  (fixtures)

from wanderlust.cli import main

TITLE = "wanderlust maze"
LIVE = ["train", "screen", "--window", TITLE, "--input", "keyboard", "--hz", "30", "--preset", "quick",
        "--num-steps", "32", "--set", "env.screen.frame_size=48", "--no-progress"]


def test_train_screen_learns_from_the_window_and_releases_every_key(game, tmp_path, capsys):
    run = tmp_path / "live"
    before = game.wait_frames()
    assert main([*LIVE, "--total-steps", "64", "--novelty", "pixel", "--run-dir", str(run)]) == 0
    err = capsys.readouterr().err
    assert "stopped by steps after 64 steps" in err
    config = json.loads((run / "config.json").read_text())
    assert config["env"]["env_id"] == "screen" and config["env"]["num_envs"] == 1
    assert config["env"]["screen"]["window"] == TITLE and config["env"]["screen"]["hz"] == 30
    assert list((run / "checkpoints").glob("ckpt-*"))
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows and rows[-1]["charts/actor_hz"] > 20
    after = game.wait_frames()
    assert after["frame"] > before["frame"]
    assert after["keys"] == []  # the game sees nothing held
    assert not keys_down(game.display)  # and neither does the X server


def test_train_screen_errors_are_one_line(game, tmp_path, capsys):
    assert main([*LIVE, "--total-steps", "64", "--window", "no such game", "--run-dir", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no window matches" in err[0] and TITLE in err[0]
    assert main(["train", "--window", TITLE, "--run-dir", str(tmp_path / "b")]) == 2
    assert "wanderlust train screen" in capsys.readouterr().err
    assert main([*LIVE, "--num-envs", "4", "--run-dir", str(tmp_path / "c")]) == 2
    assert "--num-envs 1" in capsys.readouterr().err
