"""Find a game window by title or class and read where it is on the screen.

Linux: X11 through python-xlib (``_NET_CLIENT_LIST`` when a window manager publishes it,
otherwise a walk of the window tree). Windows: the Win32 API through ctypes (client area,
DPI-aware so coordinates match mss' physical pixels).
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from typing import Any

from wanderlust.envs.screen.region import Region

TREE_DEPTH = 3
"""How deep the X11 tree walk looks for named windows (a reparenting WM adds a frame level)."""


@dataclass(frozen=True)
class WindowInfo:
    """One top-level window."""

    handle: int
    """X11 window id or Win32 HWND."""
    title: str
    """Window title ('' when it has none)."""
    wm_class: tuple[str, ...]
    """X11 WM_CLASS (instance, class) or the Win32 class name."""


def find_window(
    windows: list[WindowInfo], title: str | None = None, wm_class: str | None = None
) -> WindowInfo:
    """The window whose title contains ``title`` and/or whose class contains ``wm_class``.

    Both matches ignore case; an exact title match wins over a substring match, then the
    first in ``windows`` order. ValueError (one line, listing the open windows' titles) when
    none matches.
    """
    if title is None and wm_class is None:
        raise ValueError("give a window title (substring) or a window class to capture")
    matches = [
        window
        for window in windows
        if (title is None or title.lower() in window.title.lower())
        and (wm_class is None or any(wm_class.lower() in name.lower() for name in window.wm_class))
    ]
    if not matches:
        wanted = " and ".join(
            f"{kind} {value!r}"
            for kind, value in (("title", title), ("class", wm_class))
            if value is not None
        )
        listed = ", ".join(repr(w.title) for w in windows if w.title) or "none"
        raise ValueError(f"no window matches {wanted}; open windows: {listed}")
    exact = [w for w in matches if title is not None and w.title.lower() == title.lower()]
    return (exact or matches)[0]


# ---- X11 -------------------------------------------------------------------------------
def _x11_title(display: Any, window: Any) -> str:
    net_name = window.get_full_property(
        display.intern_atom("_NET_WM_NAME"), display.intern_atom("UTF8_STRING")
    )
    if net_name is not None and net_name.value:
        value = net_name.value
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    name = window.get_wm_name()
    if isinstance(name, bytes):
        return name.decode("latin-1")
    return name or ""


def _x11_info(display: Any, window: Any) -> WindowInfo | None:
    """WindowInfo of a viewable window with a title or class, None otherwise."""
    from Xlib import X

    if window.get_attributes().map_state != X.IsViewable:
        return None
    title = _x11_title(display, window)
    wm_class = tuple(window.get_wm_class() or ())
    if not title and not wm_class:
        return None
    return WindowInfo(int(window.id), title, wm_class)


def x11_windows(display: Any) -> list[WindowInfo]:
    """Viewable named top-level windows, in stacking order (bottom first)."""
    from Xlib import X
    from Xlib.error import XError

    root = display.screen().root
    client_list = root.get_full_property(display.intern_atom("_NET_CLIENT_LIST"), X.AnyPropertyType)
    if client_list is not None and len(client_list.value):
        candidates = [display.create_resource_object("window", int(w)) for w in client_list.value]
        found = []
        for window in candidates:
            try:
                info = _x11_info(display, window)
            except XError:  # closed while we looked
                continue
            if info is not None:
                found.append(info)
        return found
    found, frontier = [], [(child, 1) for child in root.query_tree().children]
    while frontier:
        window, depth = frontier.pop(0)
        try:
            info = _x11_info(display, window)
            if info is not None:
                found.append(info)
            elif depth < TREE_DEPTH:
                frontier.extend((child, depth + 1) for child in window.query_tree().children)
        except XError:
            continue
    return found


def x11_geometry(display: Any, handle: int) -> Region:
    """Where window ``handle`` is, in root-window coordinates (RuntimeError if it is gone)."""
    from Xlib.error import XError

    window = display.create_resource_object("window", handle)
    try:
        geometry = window.get_geometry()
        origin = display.screen().root.translate_coords(window, 0, 0)
    except XError:
        raise RuntimeError(f"window 0x{handle:x} was closed; restart the game or pick another") from None
    return Region(int(origin.x), int(origin.y), int(geometry.width), int(geometry.height))


# ---- Win32 -----------------------------------------------------------------------------
def _user32() -> Any:
    user32 = ctypes.windll.user32  # type: ignore[attr-defined]
    try:  # physical pixels, as mss captures them
        user32.SetProcessDPIAware()
    except AttributeError:
        pass
    return user32


def win32_windows() -> list[WindowInfo]:
    """Visible top-level windows with a title (Windows only)."""
    from ctypes import wintypes

    user32 = _user32()
    found: list[WindowInfo] = []
    callback_type = ctypes.WINFUNCTYPE(wintypes.BOOL, wintypes.HWND, wintypes.LPARAM)

    def visit(hwnd: int, _: int) -> bool:
        if user32.IsWindowVisible(hwnd):
            length = user32.GetWindowTextLengthW(hwnd)
            title = ctypes.create_unicode_buffer(length + 1)
            user32.GetWindowTextW(hwnd, title, length + 1)
            class_name = ctypes.create_unicode_buffer(256)
            user32.GetClassNameW(hwnd, class_name, 256)
            if title.value:
                found.append(WindowInfo(int(hwnd), title.value, (class_name.value,)))
        return True

    user32.EnumWindows(callback_type(visit), 0)
    return found


def win32_geometry(handle: int) -> Region:
    """The client area of window ``handle`` in screen coordinates (Windows only)."""
    from ctypes import wintypes

    user32 = _user32()
    rect, origin = wintypes.RECT(), wintypes.POINT(0, 0)
    if not user32.GetClientRect(handle, ctypes.byref(rect)) or not user32.ClientToScreen(
        handle, ctypes.byref(origin)
    ):
        raise RuntimeError(f"window {handle} was closed; restart the game or pick another")
    return Region(int(origin.x), int(origin.y), int(rect.right), int(rect.bottom))


# ---- either ----------------------------------------------------------------------------
class WindowTracker:
    """A window found once by title/class whose position is re-read on every ``region()``.

    Args:
        title: substring of the window title (case-insensitive).
        wm_class: substring of the window class (X11 WM_CLASS or Win32 class name).
        display_name: X display (Linux; default ``$DISPLAY``).
    """

    def __init__(
        self, title: str | None = None, wm_class: str | None = None, display_name: str | None = None
    ) -> None:
        self._display = None
        if sys.platform == "win32":
            self.window = find_window(win32_windows(), title, wm_class)
        else:
            from wanderlust.envs.screen.x11 import open_display

            self._display = open_display(display_name)
            try:
                self.window = find_window(x11_windows(self._display), title, wm_class)
            except ValueError:
                self._display.close()
                raise

    def region(self) -> Region:
        """The window's current rectangle on the screen."""
        if self._display is None:
            return win32_geometry(self.window.handle)
        return x11_geometry(self._display, self.window.handle)

    def close(self) -> None:
        """Close the X connection (if any)."""
        if self._display is not None:
            self._display.close()
            self._display = None
