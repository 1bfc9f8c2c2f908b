"""X11 plumbing (Linux): connect, name keys, read the keyboard state, send XTest input.

Everything here talks to the X server named by ``$DISPLAY`` (or an explicit display name)
through python-xlib; nothing grabs the keyboard or pointer.
"""

from __future__ import annotations

import os
from typing import Any

from wanderlust.envs.screen.errors import ScreenSetupError

MOUSE_BUTTONS: dict[str, int] = {"mouse_left": 1, "mouse_middle": 2, "mouse_right": 3}
"""Mapping-file names of the mouse buttons and their X button numbers."""


def open_display(name: str | None = None) -> Any:
    """A python-xlib ``Display`` for ``name`` (default ``$DISPLAY``), or a one-line ScreenSetupError."""
    name = name or os.environ.get("DISPLAY")
    if not name:
        raise ScreenSetupError(
            "no X display: DISPLAY is not set; run inside your desktop session, set DISPLAY=:0, "
            "or start a virtual one: Xvfb :99 -screen 0 1024x768x24 & export DISPLAY=:99"
        )
    try:
        from Xlib import display as xdisplay
    except ImportError as error:
        raise ScreenSetupError(
            f"python-xlib is missing ({error}); install it: pip install 'wanderlust[screen]'"
        ) from None
    try:
        return xdisplay.Display(name)
    except Exception as error:  # Xlib raises DisplayNameError, DisplayConnectionError, OSError
        reason = str(error).replace("\n", " ").strip()
        raise ScreenSetupError(
            f"cannot open X display {name!r} ({reason}); start X or Xvfb, or fix DISPLAY"
        ) from None


def keysym_for(name: str) -> int:
    """The X keysym of a key name (``w``, ``F12``, ``space``, ``Left``, ``Shift_L``; any case).

    Raises ValueError for a name X does not know.
    """
    from Xlib import XK

    for candidate in (name, name[:1].upper() + name[1:], name.lower()):
        keysym = XK.string_to_keysym(candidate)
        if keysym:
            return int(keysym)
    raise ValueError(
        f"unknown key name {name!r}; use X keysym names such as 'w', 'space', 'Left', 'F12', "
        "'Shift_L', 'Return', 'Escape'"
    )


def keycode_for(display: Any, name: str) -> int:
    """The keycode that types key ``name`` on ``display`` (ValueError if none does)."""
    keycode = int(display.keysym_to_keycode(keysym_for(name)))
    if keycode == 0:
        raise ValueError(f"key {name!r} is not on this X server's keyboard map")
    return keycode


def pressed_keycodes(display: Any) -> set[int]:
    """Keycodes currently down on the X server (``XQueryKeymap``: 32 bytes, one bit per key)."""
    keymap = display.query_keymap()
    return {
        byte_index * 8 + bit
        for byte_index, byte in enumerate(keymap)
        if byte
        for bit in range(8)
        if byte >> bit & 1
    }


def pressed_buttons(display: Any) -> set[int]:
    """Mouse buttons (1..5) currently down, from the pointer's modifier mask."""
    from Xlib import X

    mask = display.screen().root.query_pointer().mask
    button_masks = (X.Button1Mask, X.Button2Mask, X.Button3Mask, X.Button4Mask, X.Button5Mask)
    return {index + 1 for index, bit in enumerate(button_masks) if mask & bit}


class XTestSender:
    """Sends key, mouse-button and relative mouse events through the XTEST extension.

    Key names are X keysym names (see ``keysym_for``); mouse buttons are ``mouse_left``,
    ``mouse_middle``, ``mouse_right``. Events are flushed by ``flush()``.
    """

    def __init__(self, display_name: str | None = None) -> None:
        self.display = open_display(display_name)
        if not self.display.has_extension("XTEST"):
            self.display.close()
            raise ScreenSetupError(
                "the X server has no XTEST extension; enable it (Xorg: it is on by default)"
            )
        self._keycodes: dict[str, int] = {}

    def check_name(self, name: str) -> None:
        """Raise ValueError if ``name`` is neither a mouse button nor a key on this keyboard."""
        if name not in MOUSE_BUTTONS:
            self._keycode(name)

    def _keycode(self, name: str) -> int:
        if name not in self._keycodes:
            self._keycodes[name] = keycode_for(self.display, name)
        return self._keycodes[name]

    def press(self, name: str) -> None:
        """Press a key or mouse button (not flushed)."""
        self._send(name, down=True)

    def release(self, name: str) -> None:
        """Release a key or mouse button (not flushed)."""
        self._send(name, down=False)

    def _send(self, name: str, down: bool) -> None:
        from Xlib import X
        from Xlib.ext import xtest

        if name in MOUSE_BUTTONS:
            event = X.ButtonPress if down else X.ButtonRelease
            xtest.fake_input(self.display, event, MOUSE_BUTTONS[name])
        else:
            event = X.KeyPress if down else X.KeyRelease
            xtest.fake_input(self.display, event, self._keycode(name))

    def move_mouse(self, dx: int, dy: int) -> None:
        """Move the pointer by ``(dx, dy)`` pixels (not flushed)."""
        from Xlib import X
        from Xlib.ext import xtest

        if dx or dy:
            xtest.fake_input(self.display, X.MotionNotify, detail=True, x=int(dx), y=int(dy))

    def flush(self) -> None:
        """Send queued events to the server and wait until it has processed them."""
        self.display.sync()

    def close(self) -> None:
        """Close the X connection."""
        self.display.close()


class X11Hotkey:
    """Polls one key with ``XQueryKeymap`` (no grab: the game still receives it)."""

    def __init__(self, key: str = "F12", display_name: str | None = None) -> None:
        self.key = key
        self.display = open_display(display_name)
        self._keycode = keycode_for(self.display, key)

    def pressed(self) -> bool:
        """Whether the key is down right now."""
        keymap = self.display.query_keymap()
        return bool(keymap[self._keycode // 8] >> (self._keycode % 8) & 1)

    def close(self) -> None:
        """Close the X connection."""
        self.display.close()
