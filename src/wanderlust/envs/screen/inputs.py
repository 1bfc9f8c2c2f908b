"""Input devices: how an action ``[camera x, camera y, walk x, walk y]`` reaches the game.

- ``GamepadDevice``: a virtual Xbox 360 pad (vgamepad): left stick = walk, right stick =
  camera, as in the seed; optional buttons.
- ``KeyboardMouseDevice``: held keys for the walk axes, mouse motion (or keys) for the camera,
  from a ``KeyMapping``; sends events only when the held set changes. Backends: XTest
  (``x11.XTestSender``, the Linux default) and pynput (``pynput_input.PynputSender``:
  SendInput on Windows, where it is the default; selectable on Linux for tests).
- ``RecordingDevice``: a fake that records every call and the held state, for tests.

For a real game wrap the device in ``guard.GuardedDevice`` (a helper process that releases
everything even if the agent is killed).
"""

from __future__ import annotations

import errno
import os
import sys
import time
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from wanderlust.envs.screen.errors import ScreenSetupError
from wanderlust.envs.screen.mapping import KeyMapping, held_keys, key_changes, mouse_step

TAP_SECONDS = 0.1
"""How long ``tap`` holds a key or button."""


@runtime_checkable
class InputDevice(Protocol):
    """Contract of every input device. All methods are idempotent after ``close`` except apply."""

    def apply(self, action: np.ndarray, buttons: Sequence[bool] = ()) -> None:
        """Hold the sticks ``action`` ``[4]`` in [-1, 1] and buttons ``[B]`` until the next call."""
        ...

    def tap(self, name: str) -> None:
        """Press and release one key / button (reset sequences, menus)."""
        ...

    def neutral(self) -> None:
        """Release every key and button and centre every stick."""
        ...

    def close(self) -> None:
        """Release everything, then free the device."""
        ...


def check_sticks(action: Any) -> np.ndarray:
    """float64 ``[4]`` clipped to [-1, 1]; ValueError on a bad shape or NaN/inf."""
    sticks = np.asarray(action, dtype=np.float64)
    if sticks.shape != (4,):
        raise ValueError(
            f"action must have shape (4,) = [camera x, camera y, walk x, walk y], got {sticks.shape}"
        )
    if not np.isfinite(sticks).all():
        raise ValueError(f"action contains NaN/inf: {sticks.tolist()}")
    return np.clip(sticks, -1.0, 1.0)


class RecordingDevice:
    """Fake device: ``calls`` lists every call; ``sticks`` / ``buttons`` are what is held now."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.sticks = np.zeros(4)
        self.buttons: tuple[bool, ...] = ()
        self.closed = False

    @property
    def is_neutral(self) -> bool:
        """Nothing held: sticks centred and no button down."""
        return not self.sticks.any() and not any(self.buttons)

    def apply(self, action: np.ndarray, buttons: Sequence[bool] = ()) -> None:
        if self.closed:
            raise RuntimeError("device is closed")
        self.sticks = check_sticks(action)
        self.buttons = tuple(bool(b) for b in buttons)
        self.calls.append(("apply", self.sticks.copy(), self.buttons))

    def tap(self, name: str) -> None:
        self.calls.append(("tap", name))

    def neutral(self) -> None:
        self.sticks, self.buttons = np.zeros(4), ()
        self.calls.append(("neutral",))

    def close(self) -> None:
        self.neutral()
        self.closed = True
        self.calls.append(("close",))


class KeySender(Protocol):
    """What KeyboardMouseDevice needs from a backend (``x11.XTestSender``, ``PynputSender``)."""

    def check_name(self, name: str) -> None: ...
    def press(self, name: str) -> None: ...
    def release(self, name: str) -> None: ...
    def move_mouse(self, dx: int, dy: int) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


KEY_BACKENDS = ("xtest", "pynput")
"""Keyboard/mouse backends: XTest (Linux/X11) and pynput (SendInput on Windows, XTest on X11)."""
KEYBOARD_KINDS = ("keyboard", "keyboard-pynput")
"""Input kinds served by KeyboardMouseDevice: the platform's default backend, or pynput."""


def key_backend(input_kind: str, platform: str = sys.platform) -> str:
    """The backend of a keyboard input kind: 'keyboard' is pynput on Windows and XTest
    elsewhere; 'keyboard-pynput' is pynput everywhere (to test the Windows path on Linux)."""
    if input_kind == "keyboard-pynput":
        return "pynput"
    if input_kind == "keyboard":
        return "pynput" if platform == "win32" else "xtest"
    raise ValueError(f"keyboard input kind must be one of {KEYBOARD_KINDS}, got {input_kind!r}")


def default_key_sender(display_name: str | None = None, backend: str | None = None) -> KeySender:
    """A key sender: ``backend`` 'xtest' or 'pynput' (None: the platform's default)."""
    backend = backend or key_backend("keyboard")
    if backend == "pynput":
        from wanderlust.envs.screen.pynput_input import PynputSender

        return PynputSender(display_name)
    if backend != "xtest":
        raise ValueError(f"keyboard backend must be one of {KEY_BACKENDS}, got {backend!r}")
    if sys.platform == "win32":
        raise ScreenSetupError("XTest needs Linux/X11; on Windows use --input keyboard (pynput, SendInput)")
    from wanderlust.envs.screen.x11 import XTestSender

    return XTestSender(display_name)


class KeyboardMouseDevice:
    """Walk axes -> held keys, camera axes -> relative mouse motion (or keys), per ``mapping``.

    Keeps the set of held keys and sends press/release events only on changes; mouse motion
    is sent every step the camera is deflected (sub-pixel remainders carry over).

    Args:
        mapping: the key mapping (defaults: WASD + mouse look).
        sender: the event backend; default ``default_key_sender(display_name, backend)``.
        display_name: X display (Linux; default ``$DISPLAY``).
        backend: 'xtest' or 'pynput' when ``sender`` is None (None: pynput on Windows,
            XTest elsewhere).
    """

    def __init__(
        self,
        mapping: KeyMapping | None = None,
        sender: KeySender | None = None,
        display_name: str | None = None,
        backend: str | None = None,
    ) -> None:
        self.mapping = mapping or KeyMapping()
        self.sender = sender if sender is not None else default_key_sender(display_name, backend)
        try:
            for name in self.mapping.key_names():
                self.sender.check_name(name)
        except ValueError:
            self.sender.close()
            raise
        self.held: frozenset[str] = frozenset()
        self._remainder = (0.0, 0.0)
        self._closed = False

    def apply(self, action: np.ndarray, buttons: Sequence[bool] = ()) -> None:
        if self._closed:
            raise RuntimeError("device is closed")
        sticks = check_sticks(action)
        wanted = held_keys(sticks, buttons, self.mapping)
        to_release, to_press = key_changes(self.held, wanted)
        for name in to_release:
            self.sender.release(name)
        for name in to_press:
            self.sender.press(name)
        self.held = wanted
        dx, dy, self._remainder = mouse_step(sticks[0], sticks[1], self.mapping, self._remainder)
        self.sender.move_mouse(dx, dy)
        if to_release or to_press or dx or dy:
            self.sender.flush()

    def tap(self, name: str) -> None:
        self.sender.check_name(name)
        self.sender.press(name)
        self.sender.flush()
        time.sleep(TAP_SECONDS)
        self.sender.release(name)
        self.sender.flush()

    def neutral(self) -> None:
        if self._closed:
            return
        for name in sorted(self.held):
            self.sender.release(name)
        self.held = frozenset()
        self._remainder = (0.0, 0.0)
        self.sender.flush()

    def close(self) -> None:
        if self._closed:
            return
        try:
            self.neutral()
        finally:
            self._closed = True
            self.sender.close()


X360_BUTTONS: dict[str, int] = {
    "DPAD_UP": 0x0001,
    "DPAD_DOWN": 0x0002,
    "DPAD_LEFT": 0x0004,
    "DPAD_RIGHT": 0x0008,
    "START": 0x0010,
    "BACK": 0x0020,
    "LEFT_THUMB": 0x0040,
    "RIGHT_THUMB": 0x0080,
    "LB": 0x0100,
    "RB": 0x0200,
    "GUIDE": 0x0400,
    "A": 0x1000,
    "B": 0x2000,
    "X": 0x4000,
    "Y": 0x8000,
}
"""Xbox 360 button names and their XUSB_BUTTON bits (vgamepad.XUSB_BUTTON values)."""
X360_TRIGGERS = ("LT", "RT")
"""Triggers, usable as buttons (fully pressed or released)."""

NO_VGAMEPAD = "the virtual gamepad needs vgamepad: pip install 'wanderlust[screen]'"
NO_LIBEVDEV = (
    "the virtual gamepad needs libevdev: sudo apt install libevdev2 (Fedora: sudo dnf install libevdev)"
)
NO_UINPUT = (
    "no {path}: load the uinput kernel module with `sudo modprobe uinput` "
    "(to keep it: echo uinput | sudo tee /etc/modules-load.d/uinput.conf)"
)
UINPUT_DENIED = (
    "no write permission on {path}: add a udev rule, e.g. "
    "echo 'KERNEL==\"uinput\", GROUP=\"input\", MODE=\"0660\"' | sudo tee /etc/udev/rules.d/99-uinput.rules "
    "&& sudo udevadm control --reload && sudo udevadm trigger, then `sudo usermod -aG input $USER` and log in again"
)
NO_VIGEMBUS = (
    "the virtual gamepad needs the ViGEmBus driver: install it from "
    "https://github.com/nefarius/ViGEmBus/releases, then try again ({reason})"
)


def uinput_problem(path: str, exists: bool, writable: bool) -> str | None:
    """The one-line fix when ``path`` (``/dev/uinput``) is missing or not writable, else None."""
    if not exists:
        return NO_UINPUT.format(path=path)
    if not writable:
        return UINPUT_DENIED.format(path=path)
    return None


def make_x360_pad(uinput_path: str = "/dev/uinput") -> Any:
    """A ``vgamepad.VX360Gamepad``, or ScreenSetupError saying what to install or grant."""
    if sys.platform != "win32":
        problem = uinput_problem(
            uinput_path, os.path.exists(uinput_path), os.access(uinput_path, os.W_OK)
        )
        if problem:
            raise ScreenSetupError(problem)
    try:
        import vgamepad
    except ImportError:
        raise ScreenSetupError(NO_VGAMEPAD) from None
    except OSError as error:  # libevdev.so missing on Linux, ViGEmClient.dll on Windows
        if sys.platform == "win32":
            raise ScreenSetupError(NO_VIGEMBUS.format(reason=error)) from None
        raise ScreenSetupError(NO_LIBEVDEV) from None
    try:
        return vgamepad.VX360Gamepad()
    except OSError as error:
        if error.errno == errno.ENOENT:
            raise ScreenSetupError(NO_UINPUT.format(path=uinput_path)) from None
        if error.errno in (errno.EACCES, errno.EPERM):
            raise ScreenSetupError(UINPUT_DENIED.format(path=uinput_path)) from None
        raise ScreenSetupError(f"cannot create the virtual gamepad ({error})") from None
    except Exception as error:  # vgamepad raises AssertionError/Exception when ViGEmBus is absent
        if sys.platform == "win32":
            raise ScreenSetupError(NO_VIGEMBUS.format(reason=error)) from None
        raise ScreenSetupError(f"cannot create the virtual gamepad ({error})") from None


class GamepadDevice:
    """A virtual Xbox 360 pad: left stick = walk ``[2:4]``, right stick = camera ``[0:2]``.

    Stick y is up-positive (walk forward, look up), as vgamepad and XInput expect.

    Args:
        buttons: names of the action's buttons, in order (``X360_BUTTONS`` keys, ``LT``, ``RT``).
        pad: a VX360Gamepad-like object (tests pass a fake); default ``make_x360_pad()``.
    """

    def __init__(self, buttons: Sequence[str] = (), pad: Any = None) -> None:
        valid = [*X360_BUTTONS, *X360_TRIGGERS]
        for name in buttons:
            if name not in valid:
                raise ValueError(f"unknown gamepad button {name!r}; valid: {', '.join(valid)}")
        self.button_names = tuple(buttons)
        self.pad = pad if pad is not None else make_x360_pad()
        self._closed = False

    def _set_button(self, name: str, down: bool) -> None:
        if name in X360_TRIGGERS:
            setter = self.pad.left_trigger_float if name == "LT" else self.pad.right_trigger_float
            setter(value_float=1.0 if down else 0.0)
        elif down:
            self.pad.press_button(button=X360_BUTTONS[name])
        else:
            self.pad.release_button(button=X360_BUTTONS[name])

    def apply(self, action: np.ndarray, buttons: Sequence[bool] = ()) -> None:
        if self._closed:
            raise RuntimeError("device is closed")
        sticks = check_sticks(action)
        if len(buttons) > len(self.button_names):
            raise ValueError(
                f"action has {len(buttons)} buttons but the gamepad was given {len(self.button_names)} names"
            )
        self.pad.right_joystick_float(x_value_float=float(sticks[0]), y_value_float=float(sticks[1]))
        self.pad.left_joystick_float(x_value_float=float(sticks[2]), y_value_float=float(sticks[3]))
        for name, down in zip(self.button_names, buttons):
            self._set_button(name, bool(down))
        self.pad.update()

    def tap(self, name: str) -> None:
        if name not in X360_BUTTONS and name not in X360_TRIGGERS:
            raise ValueError(f"unknown gamepad button {name!r}")
        self._set_button(name, True)
        self.pad.update()
        time.sleep(TAP_SECONDS)
        self._set_button(name, False)
        self.pad.update()

    def neutral(self) -> None:
        if self._closed:
            return
        self.pad.reset()
        self.pad.update()

    def close(self) -> None:
        if self._closed:
            return
        try:
            self.neutral()
        finally:
            self._closed = True
            self.pad = None  # vgamepad removes the virtual device when it is collected
