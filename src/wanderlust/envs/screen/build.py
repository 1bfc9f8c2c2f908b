"""``make_screen_env``: a ScreenEnv on a real window, region or monitor, with a guarded device.

This is what ``wanderlust train screen --window TITLE --input keyboard|gamepad --hz 15
--region x,y,w,h --episode-seconds S`` builds. ``--input keyboard`` is XTest on Linux and
pynput (SendInput) on Windows; ``input_kind='keyboard-pynput'`` (Python API only) picks the
pynput backend on Linux too, to test the Windows code path under Xvfb.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from wanderlust.envs.screen.env import ScreenConfig, ScreenEnv
from wanderlust.envs.screen.frames import FrameSource, open_frame_source
from wanderlust.envs.screen.guard import GuardedDevice, Hotkey, make_hotkey
from wanderlust.envs.screen.inputs import (
    KEYBOARD_KINDS,
    GamepadDevice,
    InputDevice,
    KeyboardMouseDevice,
    key_backend,
)
from wanderlust.envs.screen.mapping import load_mapping
from wanderlust.envs.screen.region import Region

INPUT_KINDS = (*KEYBOARD_KINDS, "gamepad")


def make_screen_env(
    window: str | None = None,
    window_class: str | None = None,
    region: Region | str | None = None,
    monitor: int | None = None,
    input_kind: str = "keyboard",
    mapping_path: str | Path | None = None,
    gamepad_buttons: Sequence[str] = (),
    hotkey: str | None = "F12",
    config: ScreenConfig | None = None,
    display_name: str | None = None,
    guarded: bool = True,
    render_mode: str | None = None,
) -> ScreenEnv:
    """A ScreenEnv capturing a window (title/class), a region or a monitor (default: monitor 1).

    Args:
        window: substring of the game window's title (case-insensitive).
        window_class: substring of its X11 WM_CLASS / Win32 class name.
        region: ``Region`` or ``"x,y,w,h"`` (screen pixels) instead of a window.
        monitor: mss monitor index (1 = primary, 0 = all) instead of a window.
        input_kind: 'keyboard' (keyboard + mouse: XTest on Linux, pynput/SendInput on
            Windows), 'keyboard-pynput' (pynput on any platform) or 'gamepad' (virtual X360 pad).
        mapping_path: keyboard mapping file (JSON/TOML); None: WASD + mouse look.
        gamepad_buttons: X360 button names for the action's buttons (gamepad only).
        hotkey: stop key (default F12), polled by the env and by the guard helper; None: none.
        config: rate, episode length, observation size, reset keys; ``config.buttons`` is set
            to the number of mapped buttons when it is 0.
        display_name: X display (Linux; default ``$DISPLAY``).
        guarded: run the device in the helper process that releases all inputs even if
            this process is killed (keep True for real games).
        render_mode: None or 'rgb_array'.
    """
    if input_kind not in INPUT_KINDS:
        raise ValueError(f"--input must be 'keyboard' or 'gamepad' (or 'keyboard-pynput'), got {input_kind!r}")
    if mapping_path is not None and input_kind not in KEYBOARD_KINDS:
        raise ValueError("a mapping file only applies to --input keyboard")
    if gamepad_buttons and input_kind != "gamepad":
        raise ValueError("gamepad buttons only apply to --input gamepad; name keyboard buttons in the mapping file")
    mapping = load_mapping(mapping_path) if mapping_path is not None else None
    button_count = len(mapping.buttons) if mapping is not None else len(gamepad_buttons)
    config = config or ScreenConfig()
    if config.buttons == 0 and button_count and not config.discrete:
        config = dataclasses.replace(config, buttons=button_count)
    frames: FrameSource | None = None
    device: InputDevice | None = None
    stop: Hotkey | None = None
    try:
        frames = open_frame_source(window, window_class, region, monitor, display_name=display_name)
        if guarded:
            device = GuardedDevice(input_kind, mapping, gamepad_buttons, hotkey, display_name)
        elif input_kind in KEYBOARD_KINDS:
            device = KeyboardMouseDevice(mapping, display_name=display_name, backend=key_backend(input_kind))
        else:
            device = GamepadDevice(gamepad_buttons)
        if hotkey is not None:
            stop = make_hotkey(hotkey, display_name)
        return ScreenEnv(frames, device, config, stop, render_mode=render_mode)
    except BaseException:
        for part in (stop, device, frames):
            if part is not None:
                part.close()
        raise
