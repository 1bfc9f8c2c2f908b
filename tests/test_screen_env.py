"""ScreenEnv with fake frames, a recording device, a fake clock and a fake hotkey."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from wanderlust.envs.maze.env import DISCRETE_TO_STICKS
from wanderlust.envs.screen import RecordingDevice, ScreenConfig, ScreenEnv, StopRequested, Ticker
from wanderlust.envs.screen.frames import resize_rgb


class FakeFrames:
    """A fixed 96 x 128 gradient frame; counts grabs; can be told to fail."""

    def __init__(self) -> None:
        rows = np.arange(96, dtype=np.uint8)[:, None, None]
        cols = np.arange(128, dtype=np.uint8)[None, :, None]
        self.frame = np.concatenate([np.broadcast_to(rows * 2, (96, 128, 1)),
                                     np.broadcast_to(cols, (96, 128, 1)),
                                     np.full((96, 128, 1), 7, np.uint8)], axis=2)
        self.grabs = 0
        self.fail_with: BaseException | None = None
        self.closed = False

    def grab(self) -> np.ndarray:
        if self.fail_with is not None:
            raise self.fail_with
        self.grabs += 1
        return self.frame.copy()

    def close(self) -> None:
        self.closed = True


class FakeClock:
    """Time that moves only when slept on or when ``work`` is spent."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class FakeHotkey:
    key = "F12"

    def __init__(self) -> None:
        self.down = False
        self.closed = False

    def pressed(self) -> bool:
        return self.down

    def close(self) -> None:
        self.closed = True


def make_env(config: ScreenConfig | None = None, hotkey=None):
    clock, frames, device = FakeClock(), FakeFrames(), RecordingDevice()
    env = ScreenEnv(frames, device, config or ScreenConfig(hz=10), hotkey, clock=clock, sleep=clock.sleep)
    return env, frames, device, clock


def test_check_env_passes_with_fakes():
    for discrete in (False, True):
        clock = FakeClock()  # step timing in info is then reproducible, as check_env demands
        config = ScreenConfig(hz=15, discrete=discrete, obs_size=(48, 64))
        env = ScreenEnv(FakeFrames(), RecordingDevice(), config, clock=clock, sleep=clock.sleep)
        check_env(env, skip_render_check=True)
        env.close()


def test_ticker_schedule_by_hand():
    clock = FakeClock()
    ticker = Ticker(0.1, 0.1, clock, clock.sleep)
    results = []
    for work in (0.02, 0.05, 0.115, 0.25, 0.0):  # agent time spent before each wait()
        clock.now += work
        results.append(ticker.wait())
    # 1: sleep to 100.1. 2: to 100.2. 3: 100.315 is 0.015 past 100.3 (> 0.01 tolerance): late,
    # no sleep, next deadline 100.415. 4: 100.565 past 100.415+0.01: late, next 100.665.
    # 5: sleeps to 100.665.
    expected = [(0.1, False), (0.1, False), (0.115, True), (0.25, True), (0.1, False)]
    for (seconds, late), (want_seconds, want_late) in zip(results, expected):
        assert seconds == pytest.approx(want_seconds) and late == want_late
    assert all(s <= 0.01 + 1e-12 for s in clock.sleeps)  # slices, so the hotkey is polled


def test_ticker_within_tolerance_keeps_schedule():
    clock = FakeClock()
    ticker = Ticker(0.1, 0.1, clock, clock.sleep)
    clock.now += 0.105  # 5 ms past the deadline, inside the 10 ms tolerance
    assert ticker.wait() == (pytest.approx(0.105), False)
    clock.now += 0.01
    seconds, late = ticker.wait()
    assert seconds == pytest.approx(0.095) and not late  # back on the 100.2 deadline


def test_step_timing_info_and_time_based_truncation():
    env, frames, device, clock = make_env(ScreenConfig(hz=10, episode_seconds=0.5, obs_size=(48, 64)))
    obs, info = env.reset()
    assert obs.shape == (48, 64, 3) and info["steps"] == 0 and info["late_steps"] == 0
    np.testing.assert_array_equal(obs, resize_rgb(frames.frame, (48, 64)))
    truncated_at = None
    for step in range(1, 8):
        if step == 3:
            clock.now += 0.2  # the agent was slow once
        obs, reward, terminated, truncated, info = env.step(np.array([0, 0, 0, 1.0], np.float32))
        assert reward == 0.0 and not terminated
        if truncated:
            truncated_at = step
            break
    assert info["late_steps"] == 1 and env.late_steps_total == 1
    # ticks at 0.1, 0.2, 0.4 (late), 0.5 -> truncated at step 4
    assert truncated_at == 4 and info["episode_seconds"] == pytest.approx(0.5)
    env.reset()
    assert env.step(np.zeros(4, np.float32))[4]["late_steps"] == 0


def test_actions_continuous_buttons_and_discrete():
    env, _, device, _ = make_env(ScreenConfig(hz=10, buttons=2))
    assert env.action_space.shape == (6,)
    env.reset()
    env.step(np.array([2.0, -0.5, 0.1, 1.0, 0.5, -0.2], np.float32))
    name, sticks, buttons = device.calls[-1]
    assert name == "apply" and buttons == (True, False)
    np.testing.assert_allclose(sticks, [1.0, -0.5, 0.1, 1.0], atol=1e-6)
    for bad in (np.zeros(4), np.array([0, 0, np.inf, 0, 0, 0])):
        with pytest.raises(ValueError, match="shape|NaN"):
            env.step(bad)
    denv, _, ddevice, _ = make_env(ScreenConfig(hz=10, discrete=True))
    denv.reset()
    denv.step(np.int64(3))
    np.testing.assert_array_equal(ddevice.calls[-1][1], DISCRETE_TO_STICKS[3])
    for bad in (7, -1, 1.5, True):
        with pytest.raises(ValueError, match="discrete action"):
            denv.step(bad)


def test_reset_releases_and_taps_reset_keys():
    env, _, device, clock = make_env(ScreenConfig(hz=10, reset_keys=("Escape", "Return"), reset_wait_seconds=0.5))
    start = clock.now
    env.reset()
    assert device.calls == [("neutral",), ("tap", "Escape"), ("tap", "Return")]
    assert clock.now - start == pytest.approx(0.5)


@pytest.mark.parametrize("error", [RuntimeError("capture failed"), KeyboardInterrupt()])
def test_errors_inside_step_release_inputs(error):
    env, frames, device, _ = make_env()
    env.reset()
    env.step(np.array([0, 0, 0, 1.0], np.float32))
    frames.fail_with = error
    with pytest.raises(type(error)):
        env.step(np.array([0, 0, 0, 1.0], np.float32))
    assert device.is_neutral and device.calls[-1] == ("neutral",)


def test_stop_hotkey_releases_then_raises():
    hotkey = FakeHotkey()
    env, _, device, clock = make_env(hotkey=hotkey)
    env.reset()
    env.step(np.array([0, 0, 0, 1.0], np.float32))
    assert not device.is_neutral
    hotkey.down = True
    with pytest.raises(StopRequested, match="F12"):
        env.step(np.array([0, 0, 0, 1.0], np.float32))
    assert device.is_neutral
    hotkey.down = False  # pressed while waiting for the tick: caught by the poll
    env.step(np.array([0, 0, 0, 1.0], np.float32))
    original_sleep = clock.sleep

    def sleep_then_press(seconds):
        original_sleep(seconds)
        hotkey.down = True

    env._sleep = env.ticker.sleep = sleep_then_press
    with pytest.raises(StopRequested):
        env.step(np.array([0, 0, 0, 1.0], np.float32))
    assert device.is_neutral


def test_close_releases_and_closes_everything():
    hotkey = FakeHotkey()
    env, frames, device, _ = make_env(hotkey=hotkey)
    with pytest.raises(ZeroDivisionError):
        with env:
            env.reset()
            env.step(np.array([0, 0, 0, 1.0], np.float32))
            1 / 0
    assert device.closed and device.is_neutral and frames.closed and hotkey.closed
    env.close()  # idempotent


def test_render_returns_the_full_frame_and_config_errors():
    frames, device = FakeFrames(), RecordingDevice()
    env = ScreenEnv(frames, device, ScreenConfig(hz=100), render_mode="rgb_array")
    env.reset()
    np.testing.assert_array_equal(env.render(), frames.frame)
    for bad in (dict(hz=0), dict(episode_seconds=0), dict(obs_size=(4, 84)), dict(discrete=True, buttons=1)):
        with pytest.raises(ValueError):
            ScreenConfig(**bad)
