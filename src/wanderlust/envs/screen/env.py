"""``ScreenEnv``: a live game seen through screen capture and driven by an input device.

Each ``step(action)`` applies the action, sleeps until the next tick of a fixed control
rate (``hz``), then grabs the frame. The game never waits for the agent, so the env measures
every step period and counts late steps (the agent took longer than one period).

Example (fakes; see ``make_screen_env`` for a real window):
    >>> env = ScreenEnv(frames, RecordingDevice(), ScreenConfig(hz=15))  # doctest: +SKIP
    >>> obs, info = env.reset()                                          # doctest: +SKIP
    >>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())  # doctest: +SKIP
    >>> info["step_seconds"], info["late_steps"]                         # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from wanderlust.envs.maze.env import DISCRETE_ACTIONS, DISCRETE_TO_STICKS
from wanderlust.envs.screen.errors import StopRequested
from wanderlust.envs.screen.frames import FrameSource, resize_rgb
from wanderlust.envs.screen.guard import Hotkey
from wanderlust.envs.screen.inputs import InputDevice

POLL_SLICE = 0.01
"""While waiting for the next tick, the stop hotkey is polled at least this often (seconds)."""
TIME_EPSILON = 1e-6
"""Slack (seconds) in the episode-length comparison, for float rounding of summed sleeps."""


@dataclass
class ScreenConfig:
    """Settings of a live-screen env."""

    obs_size: tuple[int, int] = (84, 84)
    """Observation (H, W) in pixels; frames are resized to it."""
    hz: float = 15.0
    """Control rate: steps per second."""
    episode_seconds: float = 300.0
    """Wall-clock length of an episode (truncated=True after it); a live game has no end."""
    discrete: bool = False
    """Discrete(7) actions mapped to sticks as in the maze (noop, forward, back, turns, strafes)."""
    buttons: int = 0
    """Buttons appended to the 4 stick axes of a continuous action (held while > 0)."""
    reset_keys: tuple[str, ...] = field(default_factory=tuple)
    """Keys/buttons tapped in order on every reset() (e.g. ('Escape', 'Return')); empty: none."""
    reset_wait_seconds: float = 0.0
    """Pause after the reset keys so the game can restart."""
    late_tolerance: float = 0.1
    """A step is late when its tick comes more than this fraction of a period after its deadline."""

    def __post_init__(self) -> None:
        if not 0.0 < float(self.hz) <= 1000.0:
            raise ValueError(f"hz must be in (0, 1000] steps per second, got {self.hz}")
        if not float(self.episode_seconds) > 0.0:
            raise ValueError(f"episode_seconds must be > 0, got {self.episode_seconds}")
        sides = tuple(self.obs_size)
        if len(sides) != 2 or not all(isinstance(s, int) and 8 <= s <= 1024 for s in sides):
            raise ValueError(f"obs_size must be (H, W) with sides in [8, 1024], got {self.obs_size!r}")
        if int(self.buttons) < 0 or (self.discrete and self.buttons):
            raise ValueError("buttons must be >= 0, and only with continuous actions (discrete=False)")
        if self.reset_wait_seconds < 0 or self.late_tolerance < 0:
            raise ValueError("reset_wait_seconds and late_tolerance must be >= 0")


class Ticker:
    """Fixed-rate schedule: ``wait()`` sleeps until the next deadline and reports the period.

    A tick that comes more than ``tolerance`` periods after its deadline is late; the
    schedule then restarts from now (no burst of catch-up steps).

    Args:
        period: seconds between ticks.
        tolerance: lateness allowed, as a fraction of the period.
        clock: monotonic seconds (``time.perf_counter``).
        sleep: sleeps seconds (``time.sleep``).
        poll: called between sleep slices of at most POLL_SLICE (may raise to abort).
    """

    def __init__(
        self,
        period: float,
        tolerance: float,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], None] = time.sleep,
        poll: Callable[[], None] | None = None,
    ) -> None:
        self.period, self.tolerance = float(period), float(tolerance)
        self.clock, self.sleep, self.poll = clock, sleep, poll
        self.start()

    def start(self) -> None:
        """Tick now: the next deadline is one period away."""
        self.last_tick = self.clock()
        self.deadline = self.last_tick + self.period

    def wait(self) -> tuple[float, bool]:
        """Sleep until the deadline; return ``(seconds since the previous tick, late)``."""
        now = self.clock()
        late = now > self.deadline + self.tolerance * self.period
        if late:
            self.deadline = now
        while now < self.deadline:
            if self.poll is not None:
                self.poll()
            self.sleep(min(POLL_SLICE, self.deadline - now))
            now = self.clock()
        step_seconds = now - self.last_tick
        self.last_tick = now
        self.deadline += self.period
        return step_seconds, late


class ScreenEnv(gym.Env):
    """A live game as a Gymnasium env, from an injected ``FrameSource`` and ``InputDevice``.

    Observation: ``Box(0, 255, (H, W, 3), uint8)`` at ``config.obs_size``.
    Action: ``Box(-1, 1, (4 + buttons,), float32)`` = [camera x, camera y, walk x, walk y,
    buttons...] as in the maze (right stick = camera, left stick = walk; a button is held
    while its value is > 0), or ``Discrete(7)`` with ``config.discrete`` (maze meanings).
    Reward: always 0 (curiosity supplies the intrinsic reward). ``terminated`` is always
    False; ``truncated`` is True once ``episode_seconds`` have passed since reset().

    ``info`` (reset and step): ``step_seconds`` (measured period of this step; 0 at reset),
    ``late`` (this step missed its tick), ``late_steps`` (late steps this episode),
    ``steps`` and ``episode_seconds`` (since reset).

    Stop hotkey: when ``stop_hotkey`` is down (polled at every step and during the wait for
    the tick), the env releases all inputs and raises ``StopRequested``; a ``GuardedDevice``
    whose helper saw the hotkey raises it too. Any exception inside step/reset releases all
    inputs before it propagates; ``close()`` releases inputs and closes the frame source,
    the device and the hotkey (the env owns them).

    Args:
        frames: where frames come from (``MssFrameSource`` or a fake).
        device: where actions go (``GuardedDevice``, ``KeyboardMouseDevice``, ... or a fake).
        config: rate, episode length, sizes, reset keys.
        stop_hotkey: polled emergency stop (``guard.make_hotkey('F12')``); None: none.
        clock: monotonic seconds (tests inject a fake).
        sleep: sleep function (tests inject a fake).
        render_mode: None or 'rgb_array' (``render()`` returns the last full-size frame).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 15}

    def __init__(
        self,
        frames: FrameSource,
        device: InputDevice,
        config: ScreenConfig | None = None,
        stop_hotkey: Hotkey | None = None,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], None] = time.sleep,
        render_mode: str | None = None,
    ) -> None:
        self.config = config or ScreenConfig()
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.frames, self.device, self.stop_hotkey = frames, device, stop_hotkey
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "render_fps": self.config.hz}
        height, width = self.config.obs_size
        self.observation_space = gym.spaces.Box(0, 255, (height, width, 3), dtype=np.uint8)
        if self.config.discrete:
            self.action_space = gym.spaces.Discrete(len(DISCRETE_ACTIONS))
        else:
            self.action_space = gym.spaces.Box(-1.0, 1.0, (4 + self.config.buttons,), dtype=np.float32)
        self.clock = clock
        self._sleep = sleep
        self.ticker = Ticker(1.0 / self.config.hz, self.config.late_tolerance, clock, sleep, self._check_stop)
        self.late_steps_total = 0
        self._episode_start = clock()
        self._steps = self._late_steps = 0
        self._last_frame: np.ndarray | None = None
        self._closed = False

    # ---- Gymnasium API --------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Release inputs, tap the reset keys, start the episode clock, grab the first frame."""
        super().reset(seed=seed)
        try:
            self._check_stop()
            self.device.neutral()
            for key in self.config.reset_keys:
                self.device.tap(key)
            if self.config.reset_keys and self.config.reset_wait_seconds:
                self._sleep(self.config.reset_wait_seconds)
            self._steps = self._late_steps = 0
            self.ticker.start()
            self._episode_start = self.ticker.last_tick
            obs = self._observe()
        except BaseException:
            self._release()
            raise
        return obs, self._info(0.0, False)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Apply ``action``, wait for the next tick, grab the frame."""
        try:
            self._check_stop()
            sticks, buttons = self._split_action(action)
            self.device.apply(sticks, buttons)
            step_seconds, late = self.ticker.wait()
            obs = self._observe()
        except BaseException:
            self._release()
            raise
        self._steps += 1
        self._late_steps += int(late)
        self.late_steps_total += int(late)
        elapsed = self.ticker.last_tick - self._episode_start
        truncated = elapsed >= self.config.episode_seconds - TIME_EPSILON
        return obs, 0.0, False, bool(truncated), self._info(step_seconds, late)

    def render(self) -> np.ndarray | None:
        """The last captured frame at full size ``[H, W, 3]`` (render_mode='rgb_array')."""
        if self.render_mode != "rgb_array":
            return None
        return None if self._last_frame is None else self._last_frame.copy()

    def close(self) -> None:
        """Release every input, then close the device, the frame source and the hotkey."""
        if self._closed:
            return
        self._closed = True
        try:
            self.device.close()
        finally:
            try:
                self.frames.close()
            finally:
                if self.stop_hotkey is not None:
                    self.stop_hotkey.close()

    # ---- internals --------------------------------------------------------------------
    def _check_stop(self) -> None:
        """Release everything and raise StopRequested if the hotkey is down."""
        if self.stop_hotkey is not None and self.stop_hotkey.pressed():
            self._release()
            raise StopRequested(f"stop hotkey {self.stop_hotkey.key} pressed: all inputs were released")

    def _release(self) -> None:
        """Best-effort neutral inputs on an error path (never masks the original error)."""
        try:
            self.device.neutral()
        except Exception:
            pass

    def _split_action(self, action: Any) -> tuple[np.ndarray, tuple[bool, ...]]:
        """``(sticks [4] float64, buttons [B] bool)`` from a continuous or discrete action."""
        if self.config.discrete:
            if isinstance(action, np.ndarray) and action.shape == ():
                action = action.item()
            if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
                raise ValueError(f"discrete action must be an int in [0, {len(DISCRETE_ACTIONS)}), got {action!r}")
            if not 0 <= int(action) < len(DISCRETE_ACTIONS):
                raise ValueError(f"discrete action must be in [0, {len(DISCRETE_ACTIONS)}), got {action}")
            return DISCRETE_TO_STICKS[int(action)].astype(np.float64), ()
        values = np.asarray(action, dtype=np.float64)
        if values.shape != self.action_space.shape:
            raise ValueError(
                f"action must have shape {self.action_space.shape} "
                f"= [camera x, camera y, walk x, walk y, buttons...], got shape {values.shape}"
            )
        if not np.isfinite(values).all():
            raise ValueError(f"action contains NaN/inf: {values.tolist()}")
        return np.clip(values[:4], -1.0, 1.0), tuple(bool(v > 0) for v in values[4:])

    def _observe(self) -> np.ndarray:
        """Grab a frame, keep it for render(), return it resized ``[H, W, 3]`` uint8."""
        frame = self.frames.grab()
        if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
            raise ValueError(f"frame source must return [H, W, 3] uint8, got {frame.shape} {frame.dtype}")
        self._last_frame = frame
        obs = resize_rgb(frame, self.config.obs_size)
        return obs if obs is not frame else frame.copy()

    def _info(self, step_seconds: float, late: bool) -> dict[str, Any]:
        return {
            "step_seconds": np.float64(step_seconds),
            "late": np.bool_(late),
            "late_steps": np.int64(self._late_steps),
            "steps": np.int64(self._steps),
            "episode_seconds": np.float64(self.ticker.last_tick - self._episode_start),
        }
