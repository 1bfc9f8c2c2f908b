"""start_xvfb: a private display of the requested size, and one-line errors when it cannot start."""

from __future__ import annotations

import shutil

import pytest

from wanderlust.envs.screen.errors import ScreenSetupError
from wanderlust.envs.screen.x11 import open_display
from wanderlust.envs.screen.xvfb import start_xvfb


def test_display_has_the_requested_screen_and_accepts_connections_at_once():
    process, display = start_xvfb(width=320, height=200, depth=24)
    try:
        assert display.startswith(":") and display[1:].isdigit()
        connection = open_display(display)  # no waiting: ready when start_xvfb returns
        screen = connection.screen()
        assert (screen.width_in_pixels, screen.height_in_pixels, screen.root_depth) == (320, 200, 24)
        connection.close()
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_missing_xvfb_is_a_one_line_setup_error(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ScreenSetupError, match=r"^Xvfb not found: apt-get install xvfb$"):
        start_xvfb()


def test_bad_screen_size_is_rejected():
    with pytest.raises(ValueError, match="positive width"):
        start_xvfb(width=0)
