"""Frame sources: where ScreenEnv's pixels come from.

A ``FrameSource`` returns RGB frames ``[H, W, 3]`` uint8 at the captured size; ScreenEnv
resizes them with ``resize_rgb``. ``MssFrameSource`` captures a monitor, a fixed region or a
window that it follows when it moves, through mss (BGRA -> RGB in numpy, no PIL).

Example (a window by title, 84 x 84 frames):
    >>> source = open_frame_source(window="wanderlust maze")  # doctest: +SKIP
    >>> frame = resize_rgb(source.grab(), (84, 84))           # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from wanderlust.envs.screen.errors import ScreenSetupError
from wanderlust.envs.screen.region import Region, intersect, parse_region
from wanderlust.envs.screen.windows import WindowTracker


@runtime_checkable
class FrameSource(Protocol):
    """Something that returns the current picture of the game."""

    def grab(self) -> np.ndarray:
        """The current frame, ``[H, W, 3]`` uint8 RGB (a new array; H, W may change)."""
        ...

    def close(self) -> None:
        """Release the capture resources (idempotent)."""
        ...


def bgra_to_rgb(raw: Any, height: int, width: int) -> np.ndarray:
    """BGRA/BGRX bytes of ``height x width`` pixels -> contiguous ``[H, W, 3]`` uint8 RGB."""
    pixels = np.frombuffer(raw, dtype=np.uint8)
    if pixels.size != height * width * 4:
        raise ValueError(f"expected {height}x{width}x4 bytes of BGRA, got {pixels.size}")
    return np.ascontiguousarray(pixels.reshape(height, width, 4)[:, :, 2::-1])


_CV2: Any = None


def _cv2() -> Any:
    """cv2 if importable (opencv-python-headless), else False; looked up once."""
    global _CV2
    if _CV2 is None:
        try:
            import cv2

            _CV2 = cv2
        except ImportError:
            _CV2 = False
    return _CV2


def block_mean(frame: np.ndarray, factor_h: int, factor_w: int) -> np.ndarray:
    """``[H, W, C]`` uint8 -> ``[H/fh, W/fw, C]``: the rounded mean of each fh x fw block."""
    height, width, channels = frame.shape
    blocks = frame.reshape(height // factor_h, factor_h, width // factor_w, factor_w, channels)
    count = factor_h * factor_w
    total = blocks.sum(axis=(1, 3), dtype=np.uint32)
    return ((total + count // 2) // count).astype(np.uint8)


def resize_rgb(frame: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Resize ``[H, W, 3]`` uint8 to ``size = (h, w)``.

    Same size: returned as is. Integer downscale: exact block mean (numpy). Otherwise
    ``cv2.resize(INTER_AREA)`` when OpenCV is installed, else nearest pixel at each output
    pixel's centre.
    """
    height, width = frame.shape[:2]
    out_h, out_w = size
    if (height, width) == (out_h, out_w):
        return frame
    if height % out_h == 0 and width % out_w == 0 and height >= out_h and width >= out_w:
        return block_mean(frame, height // out_h, width // out_w)
    cv2 = _cv2()
    if cv2:
        return cv2.resize(frame, (out_w, out_h), interpolation=cv2.INTER_AREA)
    rows = ((np.arange(out_h) + 0.5) * height / out_h).astype(np.intp)
    cols = ((np.arange(out_w) + 0.5) * width / out_w).astype(np.intp)
    return frame[rows[:, None], cols[None, :]]


class MssFrameSource:
    """Captures the rectangle ``locate()`` returns, through mss.

    ``locate`` is called on the first grab and then every ``refresh_every`` grabs, so a
    moving window is followed. Parts of the rectangle outside the screen are black.

    Args:
        locate: returns the rectangle to capture (a fixed region or a window's position).
        refresh_every: grabs between two calls of ``locate`` (>= 1).
        display_name: X display (Linux; default ``$DISPLAY``).
        on_close: called once by ``close()`` (e.g. to close a WindowTracker).
    """

    def __init__(
        self,
        locate: Callable[[], Region],
        refresh_every: int = 1,
        display_name: str | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        if int(refresh_every) < 1:
            raise ValueError(f"refresh_every must be >= 1 grab, got {refresh_every}")
        self._locate = locate
        self.refresh_every = int(refresh_every)
        self._on_close = on_close
        self._sct = _open_mss(display_name)
        screen = self._sct.monitors[0]
        self.screen = Region(screen["left"], screen["top"], screen["width"], screen["height"])
        self._region: Region | None = None
        self._grabs = 0

    @property
    def region(self) -> Region:
        """The rectangle captured by the last grab (locating it if none was done yet)."""
        if self._region is None:
            self._region = self._locate()
        return self._region

    def grab(self) -> np.ndarray:
        """The rectangle's pixels ``[H, W, 3]`` uint8 RGB."""
        if self._sct is None:
            raise RuntimeError("this frame source is closed; create a new one")
        if self._region is None or self._grabs % self.refresh_every == 0:
            self._region = self._locate()
        self._grabs += 1
        region = self._region
        visible = intersect(region, self.screen)
        if visible == region:
            return self._grab_region(region)
        frame = np.zeros((region.height, region.width, 3), dtype=np.uint8)
        if visible is not None:
            top, left = visible.top - region.top, visible.left - region.left
            frame[top : top + visible.height, left : left + visible.width] = self._grab_region(visible)
        return frame

    def _grab_region(self, region: Region) -> np.ndarray:
        shot = self._sct.grab(region.as_monitor())
        return bgra_to_rgb(shot.raw, shot.height, shot.width)

    def close(self) -> None:
        """Release mss and the window tracker."""
        if self._sct is not None:
            self._sct.close()
            self._sct = None
        if self._on_close is not None:
            self._on_close()
            self._on_close = None


def _open_mss(display_name: str | None) -> Any:
    """An ``mss.MSS`` (or ``mss.mss`` before 10.2), with one-line errors for common set-up faults."""
    if sys.platform.startswith("linux") and not (display_name or os.environ.get("DISPLAY")):
        from wanderlust.envs.screen.x11 import open_display

        open_display(display_name)  # raises the "no X display" ScreenSetupError
    try:
        import mss
    except ImportError:
        raise ScreenSetupError("screen capture needs mss: pip install 'wanderlust[screen]'") from None
    factory = getattr(mss, "MSS", None) or mss.mss
    try:
        if display_name and sys.platform.startswith("linux"):
            return factory(display=display_name)
        return factory()
    except Exception as error:  # mss.exception.ScreenShotError and friends
        reason = str(error).replace("\n", " ")
        raise ScreenSetupError(f"cannot start screen capture ({reason}); check DISPLAY / the X server") from None


def open_frame_source(
    window: str | None = None,
    window_class: str | None = None,
    region: Region | str | None = None,
    monitor: int | None = None,
    refresh_every: int = 1,
    display_name: str | None = None,
) -> MssFrameSource:
    """An mss frame source for a window (title and/or class), a region, or a monitor.

    Give exactly one of: ``window``/``window_class``, ``region`` (``Region`` or ``"x,y,w,h"``),
    ``monitor`` (mss index: 1 = primary, 0 = all monitors). Nothing given: monitor 1.
    """
    chosen = [window is not None or window_class is not None, region is not None, monitor is not None]
    if sum(chosen) > 1:
        raise ValueError("capture either a window (title/class), a region, or a monitor, not several")
    if chosen[0]:
        tracker = WindowTracker(window, window_class, display_name)
        try:
            return MssFrameSource(tracker.region, refresh_every, display_name, on_close=tracker.close)
        except BaseException:
            tracker.close()
            raise
    if region is not None:
        fixed = parse_region(region) if isinstance(region, str) else region
        return MssFrameSource(lambda: fixed, refresh_every, display_name)
    index = 1 if monitor is None else int(monitor)
    monitors = list_monitors(display_name)
    if not 0 <= index < len(monitors):
        raise ValueError(f"monitor must be in [0, {len(monitors) - 1}] (0 = all monitors), got {monitor}")
    chosen_monitor = monitors[index]
    return MssFrameSource(lambda: chosen_monitor, refresh_every, display_name)


def list_monitors(display_name: str | None = None) -> list[Region]:
    """mss' monitors: index 0 is the whole virtual screen, 1.. the physical monitors."""
    sct = _open_mss(display_name)
    try:
        return [Region(m["left"], m["top"], m["width"], m["height"]) for m in sct.monitors]
    finally:
        sct.close()
