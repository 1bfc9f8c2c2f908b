"""The pynput keyboard+mouse backend (Windows' ``--input keyboard``), tested on Linux: key
names and the Win32 pieces as pure functions, then the same device class on a private Xvfb
driving the test game, inside the guard helper, and released after ``kill -9``."""

from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from screen_fixtures import game, keycode, keys_down, subprocess_env, wait_until, xvfb  # noqa: F401  (fixtures)

from wanderlust.envs.screen import GuardedDevice, KeyboardMouseDevice, KeyMapping, ScreenConfig, make_screen_env
from wanderlust.envs.screen.errors import ScreenSetupError
from wanderlust.envs.screen.inputs import key_backend
from wanderlust.envs.screen.pynput_input import (
    NO_PYNPUT,
    PynputSender,
    import_pynput,
    pynput_key,
    vk_from_vkkeyscan,
    win32_move_input,
)
from wanderlust.envs.screen.testgame import TURN_PER_PIXEL
from wanderlust.envs.screen.x11 import open_display, pressed_buttons

TITLE = "wanderlust maze"


# ---- pure parts (no X server) -----------------------------------------------------------
def test_key_names_translate_to_pynput_keys_chars_and_buttons():
    assert pynput_key("w") == pynput_key("W") == ("char", "w")
    assert pynput_key("1") == ("char", "1")
    assert pynput_key("comma") == pynput_key(",") == ("char", ",")
    assert pynput_key("F12") == ("key", "f12") and pynput_key("f24") == ("key", "f24")
    assert pynput_key("Left") == ("key", "left") and pynput_key("space") == ("key", "space")
    assert pynput_key("Shift_L") == ("key", "shift_l") and pynput_key("Control_R") == ("key", "ctrl_r")
    assert pynput_key("Return") == ("key", "enter") and pynput_key("Escape") == ("key", "esc")
    assert pynput_key("Prior") == pynput_key("Page_Up") == ("key", "page_up")
    assert pynput_key("mouse_left") == ("button", "left") and pynput_key("mouse_right") == ("button", "right")
    for bad in ("F25", "F0", "nosuchkey", "!", "ww", "", "Mouse_Left"):
        with pytest.raises(ValueError, match="unknown key name"):
            pynput_key(bad)


def test_vkkeyscan_results_decode_or_explain():
    assert vk_from_vkkeyscan(0x0057, "w") == 0x57  # 'W' key, no modifier
    assert vk_from_vkkeyscan(0x00BC, ",") == 0xBC  # VK_OEM_COMMA
    with pytest.raises(ValueError, match="not on this keyboard layout"):
        vk_from_vkkeyscan(-1, "w")  # VkKeyScanW returns a SHORT: -1 when no key types it
    with pytest.raises(ValueError, match="needs Shift"):
        vk_from_vkkeyscan(0x0157, "W")  # shift state 1 in the high byte


class MOUSEINPUT(ctypes.Structure):
    """Win32 MOUSEINPUT with the field names pynput._util.win32 declares."""

    MOVE, ABSOLUTE = 0x0001, 0x8000
    _fields_ = [("dx", ctypes.c_long), ("dy", ctypes.c_long), ("mouseData", ctypes.c_uint32),
                ("dwFlags", ctypes.c_uint32), ("time", ctypes.c_uint32), ("dwExtraInfo", ctypes.c_void_p)]


class INPUT_union(ctypes.Union):
    _fields_ = [("mi", MOUSEINPUT)]


class INPUT(ctypes.Structure):
    MOUSE = 0
    _fields_ = [("type", ctypes.c_uint32), ("value", INPUT_union)]


def test_win32_mouse_motion_is_one_relative_move_event():
    win32 = SimpleNamespace(MOUSEINPUT=MOUSEINPUT, INPUT_union=INPUT_union, INPUT=INPUT)
    event = win32_move_input(-7, 12, win32)
    motion = event.value.mi
    assert event.type == INPUT.MOUSE and (motion.dx, motion.dy) == (-7, 12)
    assert motion.dwFlags == MOUSEINPUT.MOVE  # relative: no ABSOLUTE flag, no button bits
    assert motion.mouseData == 0


def test_keyboard_backend_per_platform():
    assert key_backend("keyboard", "win32") == "pynput"
    assert key_backend("keyboard", "linux") == "xtest"
    assert key_backend("keyboard-pynput", "linux") == key_backend("keyboard-pynput", "win32") == "pynput"
    with pytest.raises(ValueError, match="keyboard input kind"):
        key_backend("gamepad", "linux")


def test_missing_pynput_is_a_one_line_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynput", None)  # `import pynput` now fails
    with pytest.raises(ScreenSetupError) as error:
        import_pynput()
    assert str(error.value) == NO_PYNPUT and 'pip install "wanderlust[screen]"' in NO_PYNPUT
    with pytest.raises(ScreenSetupError, match="needs pynput"):
        KeyboardMouseDevice(backend="pynput", display_name=os.environ.get("DISPLAY"))
    with pytest.raises(ValueError, match="keyboard backend must be"):
        KeyboardMouseDevice(backend="sendinput")


def test_pynput_only_sends_to_its_own_display(monkeypatch):
    monkeypatch.setenv("DISPLAY", ":4242")
    with pytest.raises(ValueError, match=r"sends to \$DISPLAY \(':4242'\), not ':5'"):
        PynputSender(":5", platform="linux")


# ---- on the private Xvfb -----------------------------------------------------------------
def test_pynput_device_holds_keys_and_buttons_and_releases_them(game):
    mapping = KeyMapping(buttons=("Shift_L", "mouse_left", "comma"))
    device = KeyboardMouseDevice(mapping, display_name=game.display, backend="pynput")
    display = open_display(game.display)
    try:
        assert isinstance(device.sender, PynputSender)
        device.apply(np.array([0, 0, 0, 1.0]))  # walk forward: W
        assert keys_down() == {keycode("w")}  # a real XTest key, not a synthetic XSendEvent
        device.apply(np.array([0, 0, 0.5, 1.0]), (True, True, True))
        assert keys_down() == {keycode(k) for k in ("w", "d", "Shift_L", "comma")}
        assert pressed_buttons(display) == {1}
        # W released while Shift is held: pynput would release 'W' for a character key
        device.apply(np.array([0, 0, 0, 0]), (True, False, False))
        assert keys_down() == {keycode("Shift_L")} and not pressed_buttons(display)
        device.apply(np.array([0, 0, 0, -1.0]), (True, True, False))
        device.tap("space")
        assert keys_down() == {keycode("s"), keycode("Shift_L")}
        device.neutral()
        assert not keys_down() and not pressed_buttons(display)
        device.apply(np.array([0, 0, -1.0, 0]), (False, True, False))  # A + left button held
    finally:
        device.close()
    assert not keys_down() and not pressed_buttons(display) and device.sender.down == set()
    display.close()
    with pytest.raises(ValueError, match="unknown key name 'nosuchkey'"):
        KeyboardMouseDevice(KeyMapping(forward="nosuchkey"), backend="pynput")
    with pytest.raises(ValueError, match="not available through pynput"):
        KeyboardMouseDevice(KeyMapping(buttons=("F24",)), backend="pynput")  # X11 pynput stops at F20


def test_windows_branch_sends_relative_motion_and_layout_keys(xvfb, monkeypatch):
    """PynputSender(platform='win32') with pynput._util.win32 faked (ctypes INPUT, a recording
    SendInput, VkKeyScan of a US layout); key events still go through pynput's X11 backend."""
    sent: list[tuple[int, ...]] = []

    def send_input(count, pointer, size):
        event = ctypes.cast(pointer, ctypes.POINTER(INPUT)).contents
        sent.append((count, size, event.value.mi.dx, event.value.mi.dy, event.value.mi.dwFlags))
        return count

    def vk_key_scan(char):
        return ord(char.upper()) if char.isalnum() else -1  # US layout letters/digits only

    fake = SimpleNamespace(MOUSEINPUT=MOUSEINPUT, INPUT_union=INPUT_union, INPUT=INPUT,
                           SendInput=send_input, VkKeyScan=vk_key_scan)
    monkeypatch.setitem(sys.modules, "pynput._util.win32", fake)
    sender = PynputSender(platform="win32")
    try:
        sender.move_mouse(5, -3)
        sender.move_mouse(0, 0)  # nothing sent for no motion
        assert sent == [(1, ctypes.sizeof(INPUT), 5, -3, MOUSEINPUT.MOVE)]
        sender.check_name("w")  # VK 0x57; X11 reads it as the keysym of 'W', the same key
        with pytest.raises(ValueError, match="not on this keyboard layout"):
            sender.check_name("comma")
        sender.press("w")
        assert keys_down() == {keycode("w")}
    finally:
        sender.close()
    assert not keys_down()


def test_sender_close_releases_what_is_down(game):
    sender = PynputSender(game.display)
    sender.press("e")
    sender.press("mouse_right")
    assert keys_down() == {keycode("e")} and sender.down == {"e", "mouse_right"}
    sender.close()
    assert not keys_down() and sender.down == set()
    sender.close()  # idempotent


def test_guarded_pynput_keys_and_relative_mouse_move_the_game(game):
    config = ScreenConfig(hz=30, obs_size=(84, 84), episode_seconds=60)
    env = make_screen_env(window=TITLE, input_kind="keyboard-pynput", config=config, display_name=game.display)
    try:
        assert isinstance(env.device, GuardedDevice)
        obs, _ = env.reset()
        before = game.wait_frames()
        # 0.5 s holding W (walk y = 1), then 0.5 s turning right (camera x = 0.5: 10 px a step).
        for step in range(30):
            action = np.array([0, 0, 0, 1.0] if step < 15 else [0.5, 0, 0, 0], np.float32)
            obs_next, *_ = env.step(action)
            if step == 10:
                assert game.state()["keys"] == ["w"], "the game does not see W held"
                assert keys_down() == {keycode("w")}
            if step == 14:
                walked = game.state()
        env.device.neutral()
        after = game.wait_frames()
        assert after["keys"] == [] and not keys_down()
        assert np.hypot(walked["pose"][0] - before["pose"][0], walked["pose"][1] - before["pose"][1]) > 0.1
        # Relative motion: exactly 15 x 10 px reach the game (pynput's own move() warps the
        # cursor, which a game in relative mouse mode reads as something else entirely).
        assert after["mouse"][0] - before["mouse"][0] == 150 and after["mouse"][1] == before["mouse"][1]
        turned = (after["pose"][2] - before["pose"][2] + np.pi) % (2 * np.pi) - np.pi
        assert turned == pytest.approx(150 * TURN_PER_PIXEL, abs=1e-6)
        assert float(np.abs(obs_next.astype(np.int16) - obs.astype(np.int16)).mean()) > 5.0
    finally:
        env.close()
    assert not keys_down()


AGENT = r"""
import time
import numpy as np
from wanderlust.envs.screen import GuardedDevice, KeyMapping
device = GuardedDevice("keyboard-pynput", KeyMapping(buttons=("mouse_left",)), hotkey=None)
device.apply(np.array([0, 0, 1.0, 1.0]), (True,))
print(f"holding {device.process.pid}", flush=True)
while True:
    device.apply(np.array([0.2, 0, 1.0, 1.0]), (True,))
    time.sleep(0.02)
"""


def process_gone(pid: int) -> bool:
    """True when ``pid`` has exited (no process, or a zombie waiting to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_kill_9_of_the_agent_releases_pynput_keys_and_buttons(xvfb):
    agent = subprocess.Popen([sys.executable, "-c", AGENT], env=subprocess_env(xvfb),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready, _, _ = select.select([agent.stdout], [], [], 30.0)
        line = agent.stdout.readline().decode() if ready else ""
        assert line.startswith("holding"), f"agent did not start: {line!r} {agent.stderr.read1(4000)!r}"
        helper = int(line.split()[1])
        display = open_display(xvfb)
        assert keys_down() == {keycode("w"), keycode("d")} and pressed_buttons(display) == {1}
        os.kill(agent.pid, signal.SIGKILL)
        agent.wait(timeout=5)
        assert wait_until(lambda: not keys_down() and not pressed_buttons(display), 1.0), keys_down()
        display.close()
        assert wait_until(lambda: process_gone(helper), 5.0), "the input helper did not exit"
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
