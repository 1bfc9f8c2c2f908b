"""``wanderlust play --show``: watch a trained agent live in a browser page served on 127.0.0.1.

The play loop publishes every step to a :class:`LiveState`; a small HTTP server (standard library,
one daemon thread, loopback only) serves

- ``/``: a page that polls ``/state`` and shows the frame, the sticks (or the discrete action) and a
  trace of the novelty of each frame;
- ``/state``: JSON of the newest step (see :meth:`LiveState.snapshot`);
- ``/frame.png``: what the agent sees now (newest frame of its observation), upscaled.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import torch

from wanderlust.algo.evaluate import policy_action, start_episode
from wanderlust.envs.factory import make_env
from wanderlust.envs.maze import DISCRETE_ACTIONS, MazeEnv
from wanderlust.envs.screen.env import Ticker
from wanderlust.report.data import agent_view, upscale
from wanderlust.report.plots import image_png
from wanderlust.report.record import NoveltyScorer, load_run

LIVE_HOST = "127.0.0.1"
"""The page is served on loopback only."""
HISTORY = 300
"""Novelty values kept for the page's trace."""
VIEW_PIXELS = 320
"""The frame is upscaled (whole factors) to about this height."""
STICK_NAMES = ("camera x", "camera y", "walk x", "walk y")


class LiveState:
    """The newest step of a playing agent, shared by the play loop and the server threads."""

    def __init__(self, action_names: Sequence[str] | None = None) -> None:
        """``action_names``: names of discrete actions by index (None: show the index)."""
        self._lock = threading.Lock()
        self._action_names = list(action_names) if action_names is not None else None
        self._frame: np.ndarray | None = None
        self._png: tuple[int, bytes] | None = None
        self._history: deque[float] = deque(maxlen=HISTORY)
        self._state: dict = {"version": 0, "episode": 0, "step": 0, "action": None, "novelty": None,
                             "novelty_history": [], "coverage": None, "episode_return": 0.0, "done": False}

    def publish(self, frame: np.ndarray, env_action: np.ndarray | None, novelty: float | None, episode: int,
                step: int, episode_return: float, coverage: float | None) -> None:
        """Record one step: ``frame [H, W, 3]`` uint8 as the agent sees it, the action the env got
        (None right after a reset), the frame's raw novelty (None if unknown)."""
        action = None
        if env_action is not None:
            values = np.asarray(env_action)
            if values.ndim == 0:
                index = int(values)
                names = self._action_names or []
                name = names[index] if index < len(names) else str(index)
                action = {"kind": "discrete", "index": index, "name": name}
            else:
                action = {"kind": "sticks", "values": [round(float(v), 4) for v in values.reshape(-1)],
                          "names": list(STICK_NAMES) if values.size == 4 else None}
        with self._lock:
            if novelty is not None:
                self._history.append(float(novelty))
            if step == 0:
                self._history.clear()
            self._frame = np.asarray(frame, dtype=np.uint8)
            self._state = {"version": self._state["version"] + 1, "episode": episode, "step": step,
                           "action": action, "novelty": novelty, "novelty_history": list(self._history),
                           "coverage": coverage, "episode_return": episode_return, "done": False}

    def finish(self) -> None:
        """The play loop is over (the page says so)."""
        with self._lock:
            self._state = {**self._state, "done": True, "version": self._state["version"] + 1}

    def snapshot(self) -> dict:
        """JSON-ready copy: ``version`` (grows every publish), ``episode``, ``step``, ``action``
        (``{"kind": "sticks", "values": [4 floats], "names": [...]}`` or ``{"kind": "discrete",
        "index", "name"}``, None after a reset), ``novelty``, ``novelty_history`` (this episode, up to
        :data:`HISTORY`), ``coverage`` (maze), ``episode_return``, ``done``."""
        with self._lock:
            return dict(self._state)

    def frame_png(self) -> bytes | None:
        """The newest frame, upscaled, as PNG (encoded once per version); None before the first step."""
        with self._lock:
            frame, version = self._frame, self._state["version"]
            if self._png is not None and self._png[0] == version:
                return self._png[1]
        if frame is None:
            return None
        data = image_png(upscale(frame, max(1, VIEW_PIXELS // frame.shape[0])))
        with self._lock:
            self._png = (version, data)
        return data


def _handler_for(state: LiveState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            path = self.path.split("?", 1)[0]
            if path in ("/", "/index.html"):
                self._send(200, "text/html; charset=utf-8", PAGE.encode("utf-8"))
            elif path == "/state":
                self._send(200, "application/json", json.dumps(state.snapshot()).encode("utf-8"))
            elif path == "/frame.png":
                data = state.frame_png()
                if data is None:
                    self._send(503, "text/plain", b"no frame yet")
                else:
                    self._send(200, "image/png", data)
            else:
                self._send(404, "text/plain", b"not found: try / or /state or /frame.png")

        def _send(self, code: int, content_type: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args) -> None:  # noqa: A002 (silence per-request logs)
            pass

    return Handler


class LiveServer:
    """Serves a :class:`LiveState` on ``127.0.0.1:port`` (0 = a free port) from a daemon thread;
    a context manager."""

    def __init__(self, state: LiveState, port: int = 0) -> None:
        if not 0 <= port <= 65535:
            raise ValueError(f"--show-port must be in 0..65535 (0 = any free port), got {port}")
        try:
            self._server = ThreadingHTTPServer((LIVE_HOST, port), _handler_for(state))
        except OSError as error:
            raise RuntimeError(f"cannot serve the live view on {LIVE_HOST}:{port} ({error.strerror}); "
                               "pick another --show-port or 0 for any free one") from None
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="wanderlust-live", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LiveServer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


@dataclass
class LiveEpisode:
    """Summary of one episode played with the live view."""

    steps: int
    """Env steps of the episode."""
    episode_return: float
    """Sum of extrinsic rewards."""
    coverage: float | None
    """Maze only: fraction of cells visited at the end."""


def play_live(
    run_dir: Path, episodes: int, seed: int, deterministic: bool = False, port: int = 0, fps: float = 15.0,
    env_id: str | None = None, on_ready: Callable[[str], None] | None = None,
) -> list[LiveEpisode]:
    """Play the run's latest checkpoint for ``episodes`` seeded episodes at ``fps`` steps per second
    (0: as fast as possible) while serving the live page; ``on_ready(url)`` is called once the page
    is up. Novelty comes from the run's trained module (not shown when ``env_id`` changes the frames)."""
    if episodes <= 0:
        raise ValueError(f"--episodes must be positive, got {episodes}")
    if fps < 0:
        raise ValueError(f"--show-fps must be >= 0 (0 = as fast as possible), got {fps}")
    run = load_run(run_dir)
    config = run.config
    if env_id:
        config.env.env_id = env_id
    env = make_env(config.env)
    scorer = None
    if env.observation_space.shape == run.observation_shape:
        scorer = NoveltyScorer(run.novelty, config.env.num_envs)
    maze = env.unwrapped if isinstance(env.unwrapped, MazeEnv) else None
    state = LiveState(DISCRETE_ACTIONS if maze is not None and maze.discrete else None)
    channels_per_frame = env.observation_space.shape[0] // config.env.frame_stack
    act = policy_action(run.agent, deterministic, config.noise_hold)
    played = []
    try:
        with LiveServer(state, port) as server, torch.random.fork_rng():
            torch.manual_seed(seed)
            if on_ready is not None:
                on_ready(server.url)
            ticker = Ticker(1.0 / fps, tolerance=1.0) if fps > 0 else None
            for episode in range(episodes):
                played.append(_play_one(env, act, scorer, state, episode, seed + episode, channels_per_frame, ticker))
            state.finish()
    finally:
        env.close()
    return played


def _play_one(env, act, scorer: NoveltyScorer | None, state: LiveState, episode: int, seed: int,
              channels_per_frame: int, ticker: Ticker | None) -> LiveEpisode:
    obs, info = env.reset(seed=seed)
    start_episode(act)
    if scorer is not None:
        scorer.reset()
    state.publish(agent_view(obs, channels_per_frame), None, None, episode, 0, 0.0, _coverage(info))
    steps, total, done = 0, 0.0, False
    while not done:
        action = np.asarray(act(obs))
        next_obs, reward, terminated, truncated, info = env.step(action)
        done = bool(terminated or truncated)
        novelty = scorer.score(obs, action, next_obs, done) if scorer is not None else None
        steps, total = steps + 1, total + float(reward)
        state.publish(agent_view(next_obs, channels_per_frame), action, novelty, episode, steps, total, _coverage(info))
        obs = next_obs
        if ticker is not None:
            ticker.wait()
    return LiveEpisode(steps, total, _coverage(info))


def _coverage(info: dict) -> float | None:
    return float(info["coverage"]) if "coverage" in info else None


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>wanderlust live</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1rem; color: #222; display: flex; gap: 1.5rem; flex-wrap: wrap; }
#frame { image-rendering: pixelated; border: 1px solid #ccc; min-width: 160px; min-height: 160px; }
.panel { min-width: 320px; } .big { font-size: 1.6rem; font-weight: 600; } .muted { color: #777; }
svg.stick { border: 1px solid #ccc; border-radius: 50%; background: #fafafa; margin-right: .8rem; }
</style></head><body>
<div><img id="frame" alt="what the agent sees"><div id="status" class="muted">waiting for the agent...</div></div>
<div class="panel">
  <div>novelty of this frame</div><div id="novelty" class="big">-</div>
  <svg id="trace" width="320" height="90" style="border:1px solid #ccc"><polyline id="line" fill="none"
    stroke="#1f77b4" stroke-width="1.5" points=""/></svg>
  <div style="margin-top:1rem">action</div><div id="action" class="big">-</div>
  <div id="sticks"><svg class="stick" width="110" height="110"><circle cx="55" cy="55" r="50" fill="none"
    stroke="#bbb"/><circle id="cam" cx="55" cy="55" r="7" fill="#d62728"/></svg><svg class="stick" width="110"
    height="110"><circle cx="55" cy="55" r="50" fill="none" stroke="#bbb"/><circle id="walk" cx="55" cy="55" r="7"
    fill="#2ca02c"/></svg><div class="muted">left: camera (look), right: walk</div></div>
</div>
<script>
var shown = -1;
function put(id, x, y) { var c = document.getElementById(id); c.setAttribute("cx", 55 + 48 * x);
  c.setAttribute("cy", 55 - 48 * y); }
function update(s) {
  if (s.version === shown) { return; }
  shown = s.version;
  document.getElementById("frame").src = "/frame.png?v=" + s.version;
  var cov = s.coverage === null ? "" : ", coverage " + (100 * s.coverage).toFixed(1) + "%";
  document.getElementById("status").textContent = (s.done ? "finished: " : "") + "episode " + s.episode +
    ", step " + s.step + ", return " + s.episode_return.toFixed(3) + cov;
  document.getElementById("novelty").textContent = s.novelty === null ? "-" : s.novelty.toPrecision(4);
  var h = s.novelty_history, top = Math.max.apply(null, h.concat([1e-9])), pts = [];
  for (var i = 0; i < h.length; i++) { pts.push((320 * i / Math.max(h.length - 1, 1)).toFixed(1) + "," +
    (88 - 84 * h[i] / top).toFixed(1)); }
  document.getElementById("line").setAttribute("points", pts.join(" "));
  var a = s.action, text = "-";
  if (a && a.kind === "discrete") { text = a.name; }
  if (a && a.kind === "sticks") { text = a.values.map(function (v) { return v.toFixed(2); }).join("  ");
    if (a.values.length === 4) { put("cam", a.values[0], a.values[1]); put("walk", a.values[2], a.values[3]); } }
  document.getElementById("sticks").style.display = a && a.kind === "discrete" ? "none" : "block";
  document.getElementById("action").textContent = text;
}
function poll() { fetch("/state", {cache: "no-store"}).then(function (r) { return r.json(); })
  .then(function (s) { update(s); setTimeout(poll, 100); })
  .catch(function () { document.getElementById("status").textContent = "play has ended (server closed)"; }); }
poll();
</script></body></html>
"""
