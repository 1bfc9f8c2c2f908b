"""Exceptions of the live-screen env."""

from __future__ import annotations


class ScreenSetupError(RuntimeError):
    """The machine is not set up for screen play (no X display, no gamepad driver, ...).

    The message is one line that says what to install, start or grant.
    """


class StopRequested(Exception):
    """The stop hotkey was pressed; every key, button and stick was released before raising.

    Not a ``RuntimeError``: a runner catches it to end the run cleanly (exit code 0).
    """
