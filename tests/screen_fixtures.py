"""Fixtures for the screen tests: a private Xvfb display and the test game running on it.

Input safety: every test that presses keys or moves the mouse uses ``xvfb`` and checks that
DISPLAY points at that private server, never at a real desktop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")


def wait_until(condition: Callable[[], object], timeout: float, interval: float = 0.02) -> object:
    """Poll ``condition`` until it returns something truthy (returned) or ``timeout`` passes (None)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


@pytest.fixture(scope="module")
def xvfb() -> Iterator[str]:
    """A private 1024x768 Xvfb display for this test module; DISPLAY points at it meanwhile."""
    from wanderlust.envs.screen.errors import ScreenSetupError
    from wanderlust.envs.screen.xvfb import start_xvfb

    try:
        process, display = start_xvfb(width=1024, height=768)
    except ScreenSetupError as error:
        pytest.fail(f"the screen tests need a private X display: {error}")
    previous = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = display
    try:
        yield display
    finally:
        if previous is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = previous
        process.terminate()
        process.wait(timeout=10)


def keys_down(display: str | None = None) -> set[int]:
    """Keycodes down on ``display`` (default ``$DISPLAY``: the private Xvfb), read with XQueryKeymap."""
    from wanderlust.envs.screen.x11 import open_display, pressed_keycodes

    connection = open_display(display)
    try:
        return pressed_keycodes(connection)
    finally:
        connection.close()


def keycode(name: str) -> int:
    """The keycode of key ``name`` (an X keysym name) on ``$DISPLAY``: the private Xvfb."""
    from wanderlust.envs.screen.x11 import keycode_for, open_display

    display = open_display()
    try:
        return keycode_for(display, name)
    finally:
        display.close()


def subprocess_env(display: str) -> dict[str, str]:
    """Environment for child processes: the private display, the source tree, SDL on X11."""
    assert os.environ.get("DISPLAY") == display, "refusing to send input outside the private Xvfb"
    env = dict(os.environ, DISPLAY=display, SDL_VIDEODRIVER="x11", PYGAME_HIDE_SUPPORT_PROMPT="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
    env.pop("SDL_AUDIODRIVER", None)
    return env


class Game:
    """The test game running on the private display; ``state()`` reads its state file."""

    def __init__(self, display: str, state_file: Path) -> None:
        self.display = display
        self.state_file = state_file
        self.window_id = 0
        self.process = subprocess.Popen(
            [sys.executable, "-m", "wanderlust.envs.screen.testgame", "--state-file", str(state_file)],
            env=subprocess_env(display),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def state(self) -> dict:
        return json.loads(self.state_file.read_text())

    def wait_frames(self, count: int = 3, timeout: float = 5.0) -> dict:
        """Wait until the game has drawn ``count`` more frames; returns the newest state."""
        start = self.state()["frame"]
        reached = wait_until(lambda: self.state()["frame"] >= start + count, timeout)
        assert reached, "the test game stopped drawing frames"
        return self.state()

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def game(xvfb: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Game]:
    """The test game window on the private display, focused, with a state file."""
    from Xlib import X

    from wanderlust.envs.screen.windows import find_window, x11_windows
    from wanderlust.envs.screen.x11 import open_display

    game = Game(xvfb, tmp_path_factory.mktemp("game") / "state.json")
    try:
        started = wait_until(lambda: game.state_file.exists() or game.process.poll() is not None, 20.0)
        if not started or game.process.poll() is not None:
            error = game.process.stderr.read().decode() if game.process.poll() is not None else "timeout"
            pytest.fail(f"the test game did not start: {error[-2000:]}")
        display = open_display(xvfb)
        window = find_window(x11_windows(display), title="wanderlust maze")
        display.create_resource_object("window", window.handle).set_input_focus(X.RevertToParent, X.CurrentTime)
        display.sync()
        display.close()
        game.window_id = window.handle
        game.wait_frames()
        yield game
    finally:
        game.close()
