"""Screen rectangles: parse ``x,y,w,h`` and clip to the screen (pure functions)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Region:
    """A rectangle of the screen in pixels, origin at the top-left of the virtual screen."""

    left: int
    """x of the left edge."""
    top: int
    """y of the top edge."""
    width: int
    """Width in pixels (> 0)."""
    height: int
    """Height in pixels (> 0)."""

    def as_monitor(self) -> dict[str, int]:
        """The dict ``mss.MSS.grab`` takes."""
        return {"left": self.left, "top": self.top, "width": self.width, "height": self.height}


def parse_region(text: str) -> Region:
    """``"x,y,w,h"`` (integers, w and h > 0) -> Region; ValueError with the expected form otherwise.

    >>> parse_region("10, 20, 320, 240")
    Region(left=10, top=20, width=320, height=240)
    """
    parts = [part.strip() for part in str(text).split(",")]
    try:
        left, top, width, height = (int(part) for part in parts)
    except ValueError:
        raise ValueError(
            f"region must be x,y,w,h in integer pixels (e.g. 0,0,640,480), got {text!r}"
        ) from None
    if width <= 0 or height <= 0:
        raise ValueError(f"region width and height must be > 0, got {text!r}")
    return Region(left, top, width, height)


def intersect(region: Region, bounds: Region) -> Region | None:
    """The part of ``region`` inside ``bounds``, or None when they do not overlap."""
    left = max(region.left, bounds.left)
    top = max(region.top, bounds.top)
    right = min(region.left + region.width, bounds.left + bounds.width)
    bottom = min(region.top + region.height, bounds.top + bounds.height)
    if right <= left or bottom <= top:
        return None
    return Region(left, top, right - left, bottom - top)
