"""The real path on a private Xvfb: the test game's window captured through mss and driven
through XTest by a guarded keyboard+mouse device, at a fixed control rate."""

from __future__ import annotations

import numpy as np
import pytest
from screen_fixtures import game, keycode, keys_down, wait_until, xvfb  # noqa: F401  (fixtures)

from wanderlust.envs.screen import (
    GuardedDevice,
    KeyboardMouseDevice,
    KeyMapping,
    ScreenConfig,
    ScreenEnv,
    make_screen_env,
    open_frame_source,
)
from wanderlust.envs.screen.testgame import TURN_PER_PIXEL, render_view
from wanderlust.envs.screen.windows import x11_windows
from wanderlust.envs.screen.x11 import open_display, pressed_buttons, pressed_keycodes

TITLE = "wanderlust maze"


def mean_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


def move_window(window_id: int, x: int, y: int) -> None:
    display = open_display()
    display.create_resource_object("window", window_id).configure(x=x, y=y)
    display.sync()
    display.close()


def test_frames_come_from_the_window_and_follow_it(game):
    state = game.wait_frames()
    expected = render_view(state)  # what the game draws for its current pose
    source = open_frame_source(window=TITLE)
    try:
        frame = source.grab()
        assert frame.shape == expected.shape == (240, 320, 3) and frame.dtype == np.uint8
        assert mean_abs_diff(frame, expected) < 1.0
        first = source.region
        shifted = open_frame_source(region=f"{first.left + 40},{first.top},{first.width},{first.height}")
        assert mean_abs_diff(shifted.grab(), expected) > 10.0  # the comparison can tell frames apart
        shifted.close()
        move_window(game.window_id, first.left - 200, first.top + 100)
        moved = wait_until(lambda: source.grab() is not None and source.region.left == first.left - 200, 3.0)
        assert moved, f"frame source did not follow the window (still at {source.region})"
        game.wait_frames()
        assert source.region.top == first.top + 100
        assert mean_abs_diff(source.grab(), render_view(game.state())) < 1.0
        stale = open_frame_source(region=first)
        assert mean_abs_diff(stale.grab(), expected) > 10.0  # the old place no longer shows it
        stale.close()
        move_window(game.window_id, -100, first.top)  # partly off-screen: that part is black
        assert wait_until(lambda: source.grab() is not None and source.region.left == -100, 3.0)
        game.wait_frames()
        frame, expected = source.grab(), render_view(game.state())
        assert frame.shape == (240, 320, 3) and not frame[:, :100].any()
        assert mean_abs_diff(frame[:, 100:], expected[:, 100:]) < 1.0
    finally:
        source.close()
        move_window(game.window_id, first.left, first.top)


def test_no_matching_window_lists_open_windows(game):
    with pytest.raises(ValueError) as error:
        open_frame_source(window="Doom")
    assert str(error.value) == "no window matches title 'Doom'; open windows: 'wanderlust maze'"
    with pytest.raises(ValueError, match="open windows: 'wanderlust maze'"):
        make_screen_env(window_class="quake", hotkey=None)


def test_monitor_source(xvfb):
    source = open_frame_source(monitor=1)
    assert source.grab().shape == (768, 1024, 3)
    source.close()
    with pytest.raises(ValueError, match=r"monitor must be in \[0, 1\]"):
        open_frame_source(monitor=5)
    with pytest.raises(ValueError, match="not several"):
        open_frame_source(window=TITLE, monitor=1)


def test_window_list_from_a_window_manager_client_list(game):
    """With a window manager, _NET_CLIENT_LIST is used (here set by hand; 0x1234 is gone)."""
    from Xlib import Xatom

    display = open_display(game.display)
    root = display.screen().root
    client_list = display.intern_atom("_NET_CLIENT_LIST")
    root.change_property(client_list, Xatom.WINDOW, 32, [0x1234, game.window_id])
    display.sync()
    try:
        windows = x11_windows(display)
        assert [(w.handle, w.title) for w in windows] == [(game.window_id, TITLE)]
        root.change_property(client_list, Xatom.WINDOW, 32, [0x1234])
        display.sync()
        with pytest.raises(ValueError, match="open windows: none"):
            open_frame_source(window=TITLE, display_name=game.display)
    finally:
        root.delete_property(client_list)
        display.sync()
        display.close()


def test_keyboard_device_holds_keys_and_mouse_buttons(game):
    mapping = KeyMapping(buttons=("space", "mouse_left"))
    device = KeyboardMouseDevice(mapping, display_name=game.display)
    display = open_display(game.display)
    try:
        device.apply(np.array([0, 0, 0.5, 0]), (True, True))
        assert pressed_keycodes(display) == {keycode("d"), keycode("space")}
        assert pressed_buttons(display) == {1}
        device.apply(np.array([0, 0, 0.5, 0]), (False, True))
        assert pressed_keycodes(display) == {keycode("d")}
    finally:
        device.close()
    assert not pressed_keycodes(display) and not pressed_buttons(display)
    display.close()


def test_bad_mapping_key_is_reported_by_the_helper(xvfb):
    with pytest.raises(ValueError, match="unknown key name 'nosuchkey'"):
        GuardedDevice("keyboard", KeyMapping(forward="nosuchkey"), hotkey=None)


def test_agent_keys_and_mouse_change_the_game_at_a_steady_rate(game):
    config = ScreenConfig(hz=15, obs_size=(84, 84), episode_seconds=60)
    env = make_screen_env(window=TITLE, config=config, display_name=game.display)
    try:
        obs, _ = env.reset()
        before = game.wait_frames()
        periods, late = [], 0
        # 1 s holding W (walk y = 1), then 2 s turning right with the mouse (camera x = 0.5).
        for step in range(45):
            action = np.array([0, 0, 0, 1.0] if step < 15 else [0.5, 0, 0, 0], np.float32)
            obs_next, reward, terminated, truncated, info = env.step(action)
            periods.append(float(info["step_seconds"]))
            if step == 10:
                assert game.state()["keys"] == ["w"], "the game does not see W held"
                assert keys_down() == {keycode("w")}
            if step == 14:
                walked = game.state()
            late = int(info["late_steps"])
        env.device.neutral()
        after = game.wait_frames()
        assert after["keys"] == [] and not keys_down()
        # W moved the player (the seed-0 maze has room ahead of the start pose).
        assert np.hypot(walked["pose"][0] - before["pose"][0], walked["pose"][1] - before["pose"][1]) > 0.2
        # The mouse: 30 steps x 0.5 x 20 px = 300 px to the right, each px turns TURN_PER_PIXEL.
        assert after["mouse"][0] - before["mouse"][0] == 300
        turned = (after["pose"][2] - before["pose"][2] + np.pi) % (2 * np.pi) - np.pi
        expected_turn = (300 * TURN_PER_PIXEL + np.pi) % (2 * np.pi) - np.pi
        assert turned == pytest.approx(expected_turn, abs=1e-6)
        assert mean_abs_diff(obs_next, obs) > 5.0  # the observation shows the change
        # Control rate: 15 Hz held within 5 %, few late steps.
        mean_period = float(np.mean(periods[1:]))
        assert abs(mean_period - 1 / 15) < 0.05 / 15, f"mean period {mean_period:.4f} s"
        assert late <= 3, f"{late} late steps out of 45"
    finally:
        env.close()
    assert not keys_down()


def test_screen_env_from_region_with_fake_free_input(game):
    """A region source drives ScreenEnv too; frames match the window's content."""
    from wanderlust.envs.screen import RecordingDevice

    state = game.wait_frames()
    window_source = open_frame_source(window=TITLE)
    region = window_source.region
    window_source.close()
    env = ScreenEnv(open_frame_source(region=region), RecordingDevice(), ScreenConfig(hz=30, obs_size=(120, 160)))
    obs, _ = env.reset()
    expected = render_view(state)
    assert mean_abs_diff(obs, expected.reshape(120, 2, 160, 2, 3).mean(axis=(1, 3))) < 1.0
    env.close()
