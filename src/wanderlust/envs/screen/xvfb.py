"""A private virtual X display (Xvfb) for tests, benchmarks and headless play.

The server takes a free display number itself (``-displayfd``), accepts no TCP connections
(``-nolisten tcp``) and keeps its state when the last client leaves (``-noreset``). Input sent
to it never reaches the user's desktop.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from wanderlust.envs.screen.errors import ScreenSetupError


def start_xvfb(width: int = 1024, height: int = 768, depth: int = 24) -> tuple[subprocess.Popen, str]:
    """Start Xvfb with one ``width x height x depth`` screen on a free display number.

    Returns ``(process, ":N")`` once the server accepts connections (Xvfb reports the number
    through ``-displayfd`` only when it is ready). The caller terminates ``process``.
    ScreenSetupError (one line) when Xvfb is not installed or does not start.
    """
    if min(width, height, depth) < 1:
        raise ValueError(f"Xvfb screen must have positive width, height and depth, got {width}x{height}x{depth}")
    if shutil.which("Xvfb") is None:
        raise ScreenSetupError("Xvfb not found: apt-get install xvfb")
    read_end, write_end = os.pipe()
    process = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_end), "-screen", "0", f"{width}x{height}x{depth}", "-nolisten", "tcp",
         "-noreset"],
        pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    with os.fdopen(read_end) as numbers:
        number = numbers.readline().strip()
    if not number:
        process.kill()
        process.wait()
        raise ScreenSetupError("Xvfb did not start (no display number reported); run `Xvfb :99` to see why")
    return process, f":{number}"
