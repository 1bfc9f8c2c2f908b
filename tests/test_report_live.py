"""``play --show``: the live page on 127.0.0.1 serves the newest frame, action and novelty while playing."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.conftest import tiny_config
from wanderlust.algo.trainer import train
from wanderlust.cli import main
from wanderlust.envs.maze import DISCRETE_ACTIONS
from wanderlust.report.live import LIVE_HOST, VIEW_PIXELS, LiveServer, LiveState, play_live
from wanderlust.runtime.rundir import create_run_dir, save_config


@pytest.fixture(scope="module")
def discrete_run(tmp_path_factory) -> Path:
    """One update on the discrete maze with pixel novelty; episodes of 24 steps."""
    config = tiny_config(env__env_id="wanderlust/MazeDiscrete-v0", novelty_name="pixel", total_steps=32,
                         checkpoint_every=32, env__max_episode_steps=24)
    run_dir = create_run_dir(tmp_path_factory.mktemp("live") / "run", name_parts=(), resume=False)
    save_config(run_dir, config.to_dict())
    train(config, run_dir, show_progress=False)
    return run_dir


def _get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def test_state_names_actions_and_keeps_this_episodes_novelty():
    state = LiveState(DISCRETE_ACTIONS)
    frame = np.zeros((40, 40, 3), dtype=np.uint8)
    state.publish(frame, None, None, episode=0, step=0, episode_return=0.0, coverage=0.04)
    state.publish(frame, np.int64(3), 0.5, episode=0, step=1, episode_return=0.0, coverage=0.04)
    state.publish(frame, np.int64(1), 0.25, episode=0, step=2, episode_return=1.0, coverage=0.08)
    snapshot = state.snapshot()
    assert snapshot["action"] == {"kind": "discrete", "index": 1, "name": "forward"}
    assert snapshot["novelty_history"] == [0.5, 0.25] and snapshot["version"] == 3 and not snapshot["done"]
    state.publish(frame, None, None, episode=1, step=0, episode_return=0.0, coverage=0.04)
    assert state.snapshot()["novelty_history"] == []  # a new episode starts a new trace
    sticks = LiveState()
    sticks.publish(frame, np.array([0.5, -1.0, 0.0, 0.25], np.float32), 1.0, 0, 1, 0.0, None)
    assert sticks.snapshot()["action"]["values"] == [0.5, -1.0, 0.0, 0.25]
    assert sticks.snapshot()["action"]["names"][0] == "camera x"
    sticks.finish()
    assert sticks.snapshot()["done"]
    side = (VIEW_PIXELS // 40) * 40
    assert Image.open(io.BytesIO(sticks.frame_png())).size == (side, side)


def test_server_binds_loopback_and_answers_state_frame_and_page():
    state = LiveState()
    with LiveServer(state) as server:
        assert server.url.startswith(f"http://{LIVE_HOST}:") and not server.url.endswith(":0/")
        assert _get(server.url + "frame.png")[0] == 503  # nothing published yet
        frame = np.full((20, 20, 3), 77, dtype=np.uint8)
        state.publish(frame, np.zeros(4, np.float32), 0.125, 0, 1, 0.0, None)
        code, kind, body = _get(server.url + "state")
        assert code == 200 and kind == "application/json" and json.loads(body)["novelty"] == 0.125
        code, kind, body = _get(server.url + "frame.png")
        image = np.asarray(Image.open(io.BytesIO(body)).convert("RGB"))
        assert code == 200 and kind == "image/png" and (image == 77).all() and image.shape[0] >= 20
        code, kind, body = _get(server.url)
        assert code == 200 and b"/state" in body and b"/frame.png" in body
        assert _get(server.url + "secrets")[0] == 404
        port = int(server.url.rsplit(":", 1)[1].strip("/"))
        with pytest.raises(RuntimeError, match="--show-port"):
            LiveServer(state, port)  # taken
    with socket.socket() as probe:  # closed: nothing listens there any more (TIME_WAIT is fine)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((LIVE_HOST, port))


def test_play_live_serves_each_step_while_the_agent_plays(discrete_run):
    urls, result = [], {}
    thread = threading.Thread(target=lambda: result.update(played=play_live(
        discrete_run, episodes=1, seed=2, fps=20.0, on_ready=urls.append)))
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not urls and time.monotonic() < deadline:
            time.sleep(0.02)
        seen = []
        while time.monotonic() < deadline:
            state = json.loads(_get(urls[0] + "state")[2])
            if state["step"] > 0:
                seen.append(state)
            if len(seen) >= 3:
                break
            time.sleep(0.05)
        code, kind, png = _get(urls[0] + "frame.png")
    finally:
        thread.join(timeout=30)
    assert seen and code == 200 and kind == "image/png"
    assert Image.open(io.BytesIO(png)).size[0] >= 40
    assert all(s["action"]["kind"] == "discrete" and s["action"]["name"] in DISCRETE_ACTIONS for s in seen)
    assert all(s["novelty"] is not None and s["novelty"] >= 0 for s in seen)  # pixel novelty of each frame
    assert len(seen[-1]["novelty_history"]) == seen[-1]["step"]
    (episode,) = result["played"]
    assert episode.steps == 24 and episode.coverage is not None


def test_play_show_from_the_command_line_prints_the_url_and_serves_state(discrete_run):
    process = subprocess.Popen(
        [sys.executable, "-m", "wanderlust.cli", "play", str(discrete_run), "--show", "--show-fps", "20"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = process.stdout.readline()
        assert line.startswith(f"live view: http://{LIVE_HOST}:"), line + process.stderr.read()
        url, state = line.split()[-1], {"version": 0}
        deadline = time.monotonic() + 30
        while state["version"] < 2 and time.monotonic() < deadline:  # the page is up before the first step
            state = json.loads(_get(url + "state")[2])
            time.sleep(0.05)
        assert state["version"] >= 2 and state["action"]["kind"] == "discrete"
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "episode 0: 24 steps" in out


def test_show_and_video_together_is_a_one_line_error(discrete_run, tmp_path, capsys):
    assert main(["play", str(discrete_run), "--show", "--video", str(tmp_path / "v.mp4")]) == 2
    assert "cannot be combined" in capsys.readouterr().err
