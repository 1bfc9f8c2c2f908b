"""Keyboard + mouse through pynput: SendInput on Windows, XTest on Linux (X11).

``PynputSender`` is a ``KeySender`` backend for ``inputs.KeyboardMouseDevice``: the same
mapping, thresholds and held-key bookkeeping as the XTest backend, and it runs in the same
guard helper process (``guard.GuardedDevice('keyboard')`` on Windows,
``GuardedDevice('keyboard-pynput')`` anywhere).

What pynput (1.7-1.8) does, and what this module does instead where games would miss it:

- **Keys**: ``keyboard.Controller().press/release`` of a ``KeyCode`` that carries a
  virtual-key code. Windows: ``SendInput`` with ``wVk`` and the scan code from
  ``MapVirtualKey``; X11: XTest ``fake_input`` of the keysym's keycode. Characters (``w``,
  ``1``, ``comma``) are turned into virtual-key codes here (``VkKeyScan`` on Windows, the
  Latin-1 keysym on X11) because pynput sends a bare character as a Unicode packet
  (Windows, characters that need Shift) or as a synthetic ``XSendEvent`` (X11): many games
  ignore both, and with Shift held pynput turns the release of ``w`` into a release of
  ``W``, which leaves ``w`` held.
- **Mouse motion**: pynput's ``mouse.Controller.move(dx, dy)`` is *not* relative: it reads
  the cursor position and sets a new one (``SetCursorPos`` on Windows, an absolute XTest
  warp on X11), clamped at the screen edges, and games that read raw input (most
  first-person games) never see it (pynput issues #364, #619). Motion is therefore sent as
  relative events: ``SendInput`` with ``MOUSEEVENTF_MOVE`` (no ``ABSOLUTE`` flag), built from
  pynput's own ctypes declarations (``pynput._util.win32``), on Windows; XTest relative
  motion on X11.
- **Mouse buttons**: ``mouse.Controller().press/release(Button.left|middle|right)``.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
from types import ModuleType
from typing import Any

from wanderlust.envs.screen.errors import ScreenSetupError

NO_PYNPUT = 'keyboard/mouse input through pynput needs pynput: pip install "wanderlust[screen]"'
MOUSE_BUTTONS: dict[str, str] = {"mouse_left": "left", "mouse_middle": "middle", "mouse_right": "right"}
"""Mapping-file mouse-button names -> ``pynput.mouse.Button`` members."""
SPECIAL_KEYS: dict[str, str] = {
    "space": "space", "return": "enter", "escape": "esc", "tab": "tab", "backspace": "backspace",
    "shift_l": "shift_l", "shift_r": "shift_r", "control_l": "ctrl_l", "control_r": "ctrl_r",
    "alt_l": "alt_l", "alt_r": "alt_r", "super_l": "cmd_l", "super_r": "cmd_r",
    "caps_lock": "caps_lock", "left": "left", "right": "right", "up": "up", "down": "down",
    "home": "home", "end": "end", "prior": "page_up", "page_up": "page_up", "next": "page_down",
    "page_down": "page_down", "insert": "insert", "delete": "delete", "pause": "pause",
    "scroll_lock": "scroll_lock", "num_lock": "num_lock", "print": "print_screen", "menu": "menu",
}
"""X keysym names (lower case) of non-character keys -> ``pynput.keyboard.Key`` members."""
CHAR_KEYS: dict[str, str] = {
    "comma": ",", "period": ".", "slash": "/", "semicolon": ";", "apostrophe": "'", "minus": "-",
    "equal": "=", "bracketleft": "[", "bracketright": "]", "backslash": "\\", "grave": "`",
}
"""X keysym names of punctuation keys -> the character they type without Shift (US layout)."""
PLAIN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789,./;'-=[]\\`")
"""Characters accepted as one-character key names (letters in either case)."""
_FUNCTION_KEY = re.compile(r"f([1-9]|1[0-9]|2[0-4])")


def pynput_key(name: str) -> tuple[str, str]:
    """What a mapping key name means to pynput: ``(kind, value)``.

    ``('button', 'left')`` for ``mouse_left``; ``('key', 'f12')`` for a ``Key`` member
    (``F12``, ``Left``, ``Shift_L``, ``Return``, ``space``; any case); ``('char', 'w')`` for a
    character key (``w``, ``W``, ``1``, ``comma``). ValueError for anything else.
    """
    if name in MOUSE_BUTTONS:
        return "button", MOUSE_BUTTONS[name]
    lower = name.lower()
    if lower in SPECIAL_KEYS:
        return "key", SPECIAL_KEYS[lower]
    if _FUNCTION_KEY.fullmatch(lower):
        return "key", lower
    if lower in CHAR_KEYS:
        return "char", CHAR_KEYS[lower]
    if len(name) == 1 and lower in PLAIN_CHARS:
        return "char", lower
    raise ValueError(
        f"unknown key name {name!r} for pynput; use X keysym names such as 'w', '1', 'comma', "
        "'space', 'Left', 'F12', 'Shift_L', 'Control_L', 'Return', 'Escape', or mouse_left/"
        "mouse_middle/mouse_right"
    )


def vk_from_vkkeyscan(result: int, char: str) -> int:
    """The virtual-key code in a Win32 ``VkKeyScanW`` result (low byte), or ValueError when
    ``char`` is not on the keyboard layout (-1) or needs Shift/Ctrl/Alt (high byte set)."""
    result &= 0xFFFF
    if result == 0xFFFF:
        raise ValueError(f"key {char!r} is not on this keyboard layout; name another key")
    if result >> 8:
        raise ValueError(f"key {char!r} needs Shift/Ctrl/Alt on this keyboard layout; name the unshifted key")
    return result & 0xFF


def win32_move_input(dx: int, dy: int, win32: Any) -> Any:
    """One relative mouse-motion ``INPUT`` for ``SendInput``: ``MOUSEEVENTF_MOVE`` without
    ``MOUSEEVENTF_ABSOLUTE``, ``dx``/``dy`` in mickeys (right/down positive).

    ``win32`` is ``pynput._util.win32`` (its ``INPUT``, ``INPUT_union``, ``MOUSEINPUT``).
    """
    motion = win32.MOUSEINPUT(dx=int(dx), dy=int(dy), mouseData=0, dwFlags=win32.MOUSEINPUT.MOVE)
    return win32.INPUT(type=win32.INPUT.MOUSE, value=win32.INPUT_union(mi=motion))


def import_pynput() -> tuple[ModuleType, ModuleType]:
    """``(pynput.keyboard, pynput.mouse)``, or a one-line ScreenSetupError."""
    try:
        from pynput import keyboard, mouse
    except ImportError as error:
        if error.name == "pynput":
            raise ScreenSetupError(NO_PYNPUT) from None
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ScreenSetupError(f"pynput cannot load its input backend ({reason})") from None
    return keyboard, mouse


class PynputSender:
    """Key, mouse-button and relative mouse events through pynput (see the module docstring).

    Key names are those of the mapping file (X keysym names, see ``pynput_key``). ``down``
    holds the names pressed and not released; ``close`` releases them first.

    Args:
        display_name: X display (Linux). pynput always uses ``$DISPLAY``, so a different name
            is a ValueError; the guard helper sets ``$DISPLAY`` for it.
        platform: ``sys.platform`` (``win32``: SendInput; anything else: X11).
    """

    def __init__(self, display_name: str | None = None, platform: str = sys.platform) -> None:
        self._win32: Any = None
        self._x11: Any = None
        if platform != "win32":
            current = os.environ.get("DISPLAY")
            if display_name and display_name != current:
                raise ValueError(
                    f"the pynput backend sends to $DISPLAY ({current!r}), not {display_name!r}: "
                    f"set DISPLAY={display_name} or use the guarded device"
                )
        self._keyboard_module, self._mouse_module = import_pynput()
        if platform == "win32":
            from pynput._util import win32

            self._win32 = win32
        else:
            from wanderlust.envs.screen.x11 import XTestSender

            self._x11 = XTestSender(display_name)  # relative motion; its display checks key maps
        try:
            self._keys: Any = self._keyboard_module.Controller()
            self._mouse: Any = self._mouse_module.Controller()
        except Exception as error:  # e.g. Xlib cannot connect
            if self._x11 is not None:
                self._x11.close()
            raise ScreenSetupError(f"pynput cannot open the keyboard/mouse ({error})") from None
        self._resolved: dict[str, tuple[str, Any]] = {}
        self.down: set[str] = set()

    def check_name(self, name: str) -> None:
        """Raise ValueError if ``name`` is not a key or mouse button pynput can press here."""
        self._resolve(name)

    def _resolve(self, name: str) -> tuple[str, Any]:
        """``('button', Button)`` or ``('key', KeyCode with a virtual-key code)`` for ``name``."""
        if name in self._resolved:
            return self._resolved[name]
        kind, value = pynput_key(name)
        if kind == "button":
            resolved: tuple[str, Any] = ("button", self._mouse_module.Button[value])
        elif kind == "key":
            try:
                resolved = ("key", self._keyboard_module.Key[value].value)
            except KeyError:
                raise ValueError(f"key {name!r} is not available through pynput on this platform") from None
        else:
            resolved = ("key", self._keyboard_module.KeyCode.from_vk(self._char_vk(value)))
        if self._x11 is not None and kind != "button" and not self._x11.display.keysym_to_keycode(resolved[1].vk):
            raise ValueError(f"key {name!r} is not on this X server's keyboard map")
        self._resolved[name] = resolved
        return resolved

    def _char_vk(self, char: str) -> int:
        """Virtual-key code of a character key: Windows VK (layout-dependent), X11 keysym."""
        if self._win32 is not None:
            return vk_from_vkkeyscan(int(self._win32.VkKeyScan(char)), char)
        return ord(char)  # X11 keysyms of Latin-1 characters are their code points

    def press(self, name: str) -> None:
        """Press a key or mouse button (sent at once)."""
        kind, target = self._resolve(name)
        (self._mouse if kind == "button" else self._keys).press(target)
        self.down.add(name)

    def release(self, name: str) -> None:
        """Release a key or mouse button (sent at once)."""
        kind, target = self._resolve(name)
        (self._mouse if kind == "button" else self._keys).release(target)
        self.down.discard(name)

    def move_mouse(self, dx: int, dy: int) -> None:
        """Move the mouse by ``(dx, dy)``: relative events, never a cursor warp."""
        if not (dx or dy):
            return
        if self._win32 is not None:
            event = win32_move_input(dx, dy, self._win32)
            self._win32.SendInput(1, ctypes.byref(event), ctypes.sizeof(event))
        else:
            self._x11.move_mouse(dx, dy)

    def flush(self) -> None:
        """Make sure everything sent so far has reached the input system."""
        if self._x11 is not None:
            self._x11.flush()  # pynput syncs its own key/button events; this is for motion

    def release_all(self) -> None:
        """Release every key and button this sender pressed and has not released; one that
        fails does not stop the others (the first error is raised at the end)."""
        failure: Exception | None = None
        for name in sorted(self.down):
            try:
                self.release(name)
            except Exception as error:  # an X error or a failed SendInput: keep releasing
                failure = failure or error
        self.flush()
        if failure is not None:
            raise failure

    def close(self) -> None:
        """Release what is still down, then drop the controllers and the X connection."""
        try:
            if self._keys is not None:
                self.release_all()
        finally:
            self._keys = self._mouse = None  # pynput closes its X connections when collected
            if self._x11 is not None:
                self._x11.close()
                self._x11 = None
