"""Play a real game from its screen: capture, input devices, release guarantees, ScreenEnv.

Modules: ``region`` (rectangles), ``windows`` (find a window by title/class), ``frames``
(mss capture, BGRA -> RGB, resize), ``mapping`` (keyboard mapping), ``x11`` (XTest, keymap),
``inputs`` (gamepad, keyboard+mouse, recording fake), ``pynput_input`` (the keyboard+mouse
backend through pynput: SendInput on Windows), ``guard`` (helper process that releases
inputs on every exit path, stop hotkey), ``env`` (ScreenEnv), ``build`` (make_screen_env),
``testgame`` (the maze in a pygame window, for tests and demos).
"""

from wanderlust.envs.screen.build import make_screen_env
from wanderlust.envs.screen.env import ScreenConfig, ScreenEnv, Ticker
from wanderlust.envs.screen.errors import ScreenSetupError, StopRequested
from wanderlust.envs.screen.frames import FrameSource, MssFrameSource, open_frame_source, resize_rgb
from wanderlust.envs.screen.guard import GuardedDevice, make_hotkey, raise_on_sigterm
from wanderlust.envs.screen.inputs import (
    GamepadDevice,
    InputDevice,
    KeyboardMouseDevice,
    RecordingDevice,
    make_x360_pad,
)
from wanderlust.envs.screen.mapping import KeyMapping, load_mapping
from wanderlust.envs.screen.region import Region, parse_region

__all__ = [
    "FrameSource",
    "GamepadDevice",
    "GuardedDevice",
    "InputDevice",
    "KeyMapping",
    "KeyboardMouseDevice",
    "MssFrameSource",
    "RecordingDevice",
    "Region",
    "ScreenConfig",
    "ScreenEnv",
    "ScreenSetupError",
    "StopRequested",
    "Ticker",
    "load_mapping",
    "make_hotkey",
    "make_screen_env",
    "make_x360_pad",
    "open_frame_source",
    "parse_region",
    "raise_on_sigterm",
    "resize_rgb",
]
