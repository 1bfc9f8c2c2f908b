"""Nothing stays held after any exit path of an agent that holds W through a guarded
keyboard device (on a private Xvfb, checked from outside with XQueryKeymap)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from screen_fixtures import keys_down, subprocess_env, wait_until, xvfb  # noqa: F401  (fixture)

from wanderlust.envs.screen.x11 import XTestSender, keycode_for, open_display

AGENT = r"""
import os, sys, time
import numpy as np
from wanderlust.envs.screen import (GuardedDevice, ScreenConfig, ScreenEnv, StopRequested,
                                    make_hotkey, raise_on_sigterm)

class Frames:
    def grab(self):
        return np.zeros((32, 32, 3), np.uint8)
    def close(self):
        pass

def say(text):
    print(text, flush=True)

mode = sys.argv[1]
forward = np.array([0, 0, 0, 1.0], np.float32)
device = GuardedDevice("keyboard", hotkey="F12")
env = ScreenEnv(Frames(), device, ScreenConfig(hz=30, obs_size=(32, 32)), make_hotkey("F12"))
try:
    with raise_on_sigterm(), env:
        env.reset()
        env.step(forward)
        say(f"holding {device.process.pid}")
        if mode in ("normal", "exception"):
            sys.stdin.readline()
            if mode == "exception":
                raise RuntimeError("boom")
        elif mode == "forked":  # a child inherits the pipe to the helper, so no EOF on kill -9
            child = os.fork()
            if child == 0:
                time.sleep(10.0)
                os._exit(0)
            say(f"forked {child}")
            while True:
                env.step(forward)
        elif mode == "stuck":
            time.sleep(3.0)
            env.step(forward)
        else:
            while True:
                env.step(forward)
    say("closed")
except StopRequested as stop:
    say(f"stopped: {stop}")
except KeyboardInterrupt:
    say("interrupted")
    sys.exit(130)
"""


def process_gone(pid: int) -> bool:
    """True when ``pid`` has exited (no process, or a zombie waiting to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


class Agent:
    """The agent script in its own process, holding W once ``start()`` returns."""

    def __init__(self, display: str, mode: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", AGENT, mode],
            env=subprocess_env(display),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        ready, _, _ = select.select([self.process.stdout], [], [], 30.0)
        line = self.process.stdout.readline().decode() if ready else ""
        if not line.startswith("holding"):
            self.process.kill()
            pytest.fail(f"agent did not start: {line!r} {self.process.stderr.read().decode()[-2000:]}")
        self.helper_pid = int(line.split()[1])
        display_ = open_display(display)
        self.w = keycode_for(display_, "w")
        display_.close()
        assert keys_down() == {self.w}, "the agent should be holding W"

    def finish(self, timeout: float = 10.0) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, out.decode(), err.decode()


def assert_all_released(agent: Agent, within: float = 1.0) -> None:
    assert wait_until(lambda: not keys_down(), within), f"still held after {within} s: {keys_down()}"
    assert wait_until(lambda: process_gone(agent.helper_pid), 5.0), "the input helper did not exit"


def tap_hotkey(display: str, key: str = "F12", seconds: float = 0.2) -> None:
    sender = XTestSender(display)
    sender.press(key)
    sender.flush()
    time.sleep(seconds)
    sender.release(key)
    sender.flush()
    sender.close()


def test_normal_close_releases(xvfb):
    agent = Agent(xvfb, "normal")
    agent.process.stdin.write(b"go\n")
    agent.process.stdin.flush()
    code, out, _ = agent.finish()
    assert code == 0 and "closed" in out
    assert_all_released(agent, within=0.0)  # released before the agent exited


def test_exception_releases(xvfb):
    agent = Agent(xvfb, "exception")
    agent.process.stdin.write(b"go\n")
    agent.process.stdin.flush()
    code, out, err = agent.finish()
    assert code == 1 and "RuntimeError: boom" in err
    assert_all_released(agent, within=0.0)


def test_ctrl_c_releases(xvfb):
    agent = Agent(xvfb, "loop")
    agent.process.send_signal(signal.SIGINT)
    code, out, _ = agent.finish()
    assert code == 130 and "interrupted" in out
    assert_all_released(agent, within=0.0)


def test_sigterm_releases(xvfb):
    agent = Agent(xvfb, "loop")
    agent.process.send_signal(signal.SIGTERM)
    code, out, _ = agent.finish()
    assert code == 128 + signal.SIGTERM and "closed" not in out
    assert_all_released(agent, within=0.0)


def test_kill_9_releases_within_a_second(xvfb):
    agent = Agent(xvfb, "loop")
    os.kill(agent.process.pid, signal.SIGKILL)
    agent.process.wait(timeout=5)
    assert agent.process.returncode == -signal.SIGKILL
    assert_all_released(agent, within=1.0)


def test_kill_9_releases_even_when_a_forked_child_keeps_the_pipe_open(xvfb):
    agent = Agent(xvfb, "forked")
    child = int(agent.process.stdout.readline().decode().split()[1])
    try:
        os.kill(agent.process.pid, signal.SIGKILL)
        agent.process.wait(timeout=5)
        assert process_gone(agent.process.pid) and not process_gone(child)
        assert_all_released(agent, within=1.0)  # PR_SET_PDEATHSIG / parent poll, not pipe EOF
    finally:
        os.kill(child, signal.SIGKILL)


def test_sigterm_to_the_helper_releases_and_the_agent_is_told(xvfb):
    agent = Agent(xvfb, "loop")
    os.kill(agent.helper_pid, signal.SIGTERM)
    assert_all_released(agent, within=1.0)
    code, _, err = agent.finish()
    assert code == 1 and "the input helper process exited (status 0)" in err


def test_stop_hotkey_stops_a_stepping_agent(xvfb):
    agent = Agent(xvfb, "loop")
    tap_hotkey(xvfb, "F12")
    code, out, err = agent.finish()
    assert code == 0 and "stopped: stop hotkey F12 pressed" in out, err[-3000:]
    assert_all_released(agent, within=0.0)


def test_stop_hotkey_works_while_the_agent_is_stuck(xvfb):
    agent = Agent(xvfb, "stuck")  # holds W, then sleeps 3 s without stepping
    started = time.monotonic()
    tap_hotkey(xvfb, "F12")
    assert_all_released(agent, within=1.0)  # the helper released it on its own
    assert time.monotonic() - started < 2.5 and agent.process.poll() is None
    code, out, err = agent.finish()
    assert code == 0 and "stopped: stop hotkey F12 pressed" in out, err[-3000:]
