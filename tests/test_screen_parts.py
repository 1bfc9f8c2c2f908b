"""Screen parts without an X server: regions, pixels, window matching, mappings, devices."""

from __future__ import annotations

import json

import numpy as np
import pytest

from wanderlust.envs.screen import frames as frames_module
from wanderlust.envs.screen.errors import ScreenSetupError
from wanderlust.envs.screen.frames import bgra_to_rgb, block_mean, resize_rgb
from wanderlust.envs.screen.guard import GuardedDevice
from wanderlust.envs.screen.inputs import (
    GamepadDevice,
    KeyboardMouseDevice,
    RecordingDevice,
    X360_BUTTONS,
    make_x360_pad,
    uinput_problem,
)
from wanderlust.envs.screen.mapping import (
    KeyMapping,
    held_keys,
    key_changes,
    load_mapping,
    mapping_from_dict,
    mouse_step,
)
from wanderlust.envs.screen.region import Region, intersect, parse_region
from wanderlust.envs.screen.windows import WindowInfo, find_window
from wanderlust.envs.screen.x11 import open_display


# ---- regions and pixels -----------------------------------------------------------------
def test_parse_region_and_errors():
    assert parse_region(" 10,20 , 320,240") == Region(10, 20, 320, 240)
    assert parse_region("-5,0,1,1") == Region(-5, 0, 1, 1)
    for bad in ("10,20,320", "a,b,c,d", "1,2,3,4,5", "0,0,0,10", "0,0,10,-1", ""):
        with pytest.raises(ValueError, match="x,y,w,h|width and height"):
            parse_region(bad)


def test_intersect_clips_to_bounds():
    screen = Region(0, 0, 100, 50)
    assert intersect(Region(-10, 40, 30, 30), screen) == Region(0, 40, 20, 10)
    assert intersect(Region(10, 10, 5, 5), screen) == Region(10, 10, 5, 5)
    assert intersect(Region(100, 0, 5, 5), screen) is None


def test_bgra_to_rgb_swaps_channels_and_drops_alpha():
    raw = bytes([1, 2, 3, 255, 10, 20, 30, 0, 7, 8, 9, 1, 40, 50, 60, 2])  # 2 x 2 BGRA
    rgb = bgra_to_rgb(raw, 2, 2)
    assert rgb.shape == (2, 2, 3) and rgb.dtype == np.uint8 and rgb.flags.c_contiguous
    np.testing.assert_array_equal(rgb[0, 0], [3, 2, 1])
    np.testing.assert_array_equal(rgb[0, 1], [30, 20, 10])
    np.testing.assert_array_equal(rgb[1, 1], [60, 50, 40])
    with pytest.raises(ValueError, match="BGRA"):
        bgra_to_rgb(raw, 3, 2)


def test_block_mean_matches_hand_computation():
    frame = np.array([[[0], [1], [10], [20]], [[2], [4], [30], [41]]], dtype=np.uint8)  # 2 x 4 x 1
    out = block_mean(frame, 2, 2)
    # (0+1+2+4)/4 = 1.75 -> 2 ; (10+20+30+41)/4 = 25.25 -> 25
    np.testing.assert_array_equal(out[..., 0], [[2, 25]])


def test_resize_paths(monkeypatch):
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, (240, 320, 3), dtype=np.uint8)
    assert resize_rgb(frame, (240, 320)) is frame
    half = resize_rgb(frame, (120, 160))
    np.testing.assert_array_equal(half, block_mean(frame, 2, 2))
    area = resize_rgb(frame, (84, 84))
    assert area.shape == (84, 84, 3) and area.dtype == np.uint8
    assert abs(float(area.mean()) - float(frame.mean())) < 2.0
    monkeypatch.setattr(frames_module, "_CV2", False)  # no OpenCV: nearest pixel at centres
    nearest = resize_rgb(frame, (84, 84))
    rows = ((np.arange(84) + 0.5) * 240 / 84).astype(int)
    cols = ((np.arange(84) + 0.5) * 320 / 84).astype(int)
    np.testing.assert_array_equal(nearest, frame[rows][:, cols])


# ---- windows --------------------------------------------------------------------------
WINDOWS = [
    WindowInfo(1, "Terminal", ("xterm", "XTerm")),
    WindowInfo(2, "wanderlust maze — level 2", ("testgame.py", "testgame.py")),
    WindowInfo(3, "Wanderlust Maze", ("pygame", "Pygame")),
    WindowInfo(4, "", ("nameless", "Nameless")),
]


def test_find_window_by_title_class_and_exact_preference():
    assert find_window(WINDOWS, title="TERMINAL").handle == 1
    assert find_window(WINDOWS, title="maze").handle == 2  # first substring match
    assert find_window(WINDOWS, title="wanderlust maze").handle == 3  # exact title wins
    assert find_window(WINDOWS, wm_class="xterm").handle == 1
    assert find_window(WINDOWS, title="maze", wm_class="pygame").handle == 3


def test_find_window_error_lists_open_windows():
    with pytest.raises(ValueError) as error:
        find_window(WINDOWS, title="Doom")
    message = str(error.value)
    assert message.startswith("no window matches title 'Doom'; open windows: 'Terminal', ")
    assert "'Wanderlust Maze'" in message and "\n" not in message
    with pytest.raises(ValueError, match="open windows: none"):
        find_window([], wm_class="doom")
    with pytest.raises(ValueError, match="title"):
        find_window(WINDOWS)


def test_no_display_error_says_what_to_do(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(ScreenSetupError, match="DISPLAY is not set.*Xvfb"):
        open_display()
    with pytest.raises(ScreenSetupError, match="DISPLAY is not set"):
        frames_module.open_frame_source(region="0,0,10,10")
    with pytest.raises(ScreenSetupError, match=r"cannot open X display ':987'"):
        open_display(":987")


# ---- keyboard mapping -----------------------------------------------------------------
def test_held_keys_thresholds_and_buttons():
    mapping = KeyMapping(buttons=("space", "mouse_left"))
    assert held_keys(np.array([0, 0, 0, 0.31]), (), mapping) == {"w"}
    assert held_keys(np.array([0, 0, 0, 0.3]), (), mapping) == set()  # strictly beyond
    assert held_keys(np.array([0.9, 0, -0.5, -1.0]), (True, False), mapping) == {"a", "s", "space"}
    assert held_keys(np.array([0, 0, 1.0, 0]), (False, True), mapping) == {"d", "mouse_left"}
    keys = KeyMapping(camera="keys", camera_threshold=0.5)
    assert held_keys(np.array([0.6, -0.6, 0, 0]), (), keys) == {"Right", "Down"}
    assert held_keys(np.array([-0.6, 0.4, 0, 0]), (), keys) == {"Left"}
    with pytest.raises(ValueError, match="buttons"):
        held_keys(np.zeros(4), (True, True, True), mapping)


def test_mouse_step_scales_and_carries_fractions():
    mapping = KeyMapping(mouse_x_pixels=20, mouse_y_pixels=10)
    assert mouse_step(0.5, 0.0, mapping, (0.0, 0.0)) == (10, 0, (0.0, 0.0))
    dx, dy, rest = mouse_step(0.0, 1.0, mapping, (0.0, 0.0))
    assert (dx, dy) == (0, -10)  # look up = mouse up = negative screen y
    assert mouse_step(0.0, 1.0, KeyMapping(invert_y=True), (0.0, 0.0))[1] == 10
    total, rest = 0, (0.0, 0.0)
    for _ in range(10):  # 0.03 * 20 = 0.6 px per step -> 6 px over 10 steps
        dx, _, rest = mouse_step(0.03, 0.0, mapping, rest)
        total += dx
    assert total == 6
    assert mouse_step(1.0, 1.0, KeyMapping(camera="keys"), (0.0, 0.0)) == (0, 0, (0.0, 0.0))


def test_key_changes():
    assert key_changes(frozenset("wa"), frozenset("wd")) == (("a",), ("d",))
    assert key_changes(frozenset(), frozenset()) == ((), ())


def test_load_mapping_json_toml_and_errors(tmp_path):
    path = tmp_path / "doom.json"
    path.write_text(json.dumps({"forward": "Up", "camera": "keys", "buttons": ["Control_L"], "walk_threshold": 0.5}))
    mapping = load_mapping(path)
    assert mapping.forward == "Up" and mapping.camera == "keys" and mapping.buttons == ("Control_L",)
    assert mapping.walk_threshold == 0.5 and mapping.back == "s"
    toml = tmp_path / "fps.toml"
    toml.write_text('mouse_x_pixels = 35\ninvert_y = true\n')
    assert load_mapping(toml).mouse_x_pixels == 35.0 and load_mapping(toml).invert_y
    cases = {
        '{"forwrd": "w"}': "unknown field",
        '{"walk_threshold": 1.5}': r"walk_threshold must be in \[0, 1\)",
        '{"camera": "joystick"}': "camera must be",
        '{"invert_y": "yes"}': "true or false",
        '{"buttons": "space"}': "list of key names",
        '{"forward": 3}': "key name string",
        "[1, 2]": "expected a table",
        "{not json": "not valid JSON",
    }
    for text, expected in cases.items():
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(ValueError, match=expected):
            load_mapping(bad)
    with pytest.raises(ValueError, match="does not exist"):
        load_mapping(tmp_path / "missing.json")
    assert mapping_from_dict({}) == KeyMapping()


# ---- devices ----------------------------------------------------------------------------
class RecordingSender:
    """Fake XTest backend: records events; 'nosuchkey' is an unknown key."""

    def __init__(self) -> None:
        self.events: list[tuple] = []
        self.down: set[str] = set()
        self.closed = False

    def check_name(self, name: str) -> None:
        if name == "nosuchkey":
            raise ValueError(f"unknown key name {name!r}")

    def press(self, name: str) -> None:
        self.events.append(("press", name))
        self.down.add(name)

    def release(self, name: str) -> None:
        self.events.append(("release", name))
        self.down.discard(name)

    def move_mouse(self, dx: int, dy: int) -> None:
        if dx or dy:
            self.events.append(("move", dx, dy))

    def flush(self) -> None:
        self.events.append(("flush",))

    def close(self) -> None:
        self.closed = True


def test_keyboard_device_sends_only_changes_and_releases_on_close():
    sender = RecordingSender()
    device = KeyboardMouseDevice(KeyMapping(mouse_x_pixels=20), sender=sender)
    device.apply(np.array([0.0, 0.0, 0.0, 1.0]))
    assert sender.events == [("press", "w"), ("flush",)]
    device.apply(np.array([0.0, 0.0, 0.0, 0.9]))  # still forward: nothing sent
    assert sender.events == [("press", "w"), ("flush",)]
    device.apply(np.array([0.5, 0.0, -1.0, 0.9]))
    assert sender.events[2:] == [("press", "a"), ("move", 10, 0), ("flush",)]
    device.apply(np.array([0.0, 0.0, -1.0, 0.0]))
    assert sender.events[5:] == [("release", "w"), ("flush",)]
    assert device.held == {"a"} and sender.down == {"a"}
    device.close()
    assert sender.down == set() and sender.closed and device.held == set()
    device.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        device.apply(np.zeros(4))


def test_keyboard_device_rejects_unknown_keys_and_bad_actions():
    with pytest.raises(ValueError, match="nosuchkey"):
        KeyboardMouseDevice(KeyMapping(forward="nosuchkey"), sender=RecordingSender())
    device = KeyboardMouseDevice(sender=RecordingSender())
    for bad in (np.zeros(3), np.array([0, 0, np.nan, 0])):
        with pytest.raises(ValueError, match="shape|NaN"):
            device.apply(bad)


class FakePad:
    """Records vgamepad VX360Gamepad calls and keeps its report-like state."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.reset()

    def left_joystick_float(self, x_value_float: float, y_value_float: float) -> None:
        self.left = (x_value_float, y_value_float)

    def right_joystick_float(self, x_value_float: float, y_value_float: float) -> None:
        self.right = (x_value_float, y_value_float)

    def press_button(self, button: int) -> None:
        self.buttons |= button

    def release_button(self, button: int) -> None:
        self.buttons &= ~button

    def left_trigger_float(self, value_float: float) -> None:
        self.triggers = (value_float, self.triggers[1])

    def right_trigger_float(self, value_float: float) -> None:
        self.triggers = (self.triggers[0], value_float)

    def reset(self) -> None:
        self.left, self.right, self.buttons, self.triggers = (0.0, 0.0), (0.0, 0.0), 0, (0.0, 0.0)

    def update(self) -> None:
        self.calls.append((self.left, self.right, self.buttons, self.triggers))


def test_gamepad_device_sticks_buttons_and_neutral():
    pad = FakePad()
    device = GamepadDevice(buttons=("A", "RT"), pad=pad)
    device.apply(np.array([0.25, -0.5, 1.0, 2.0]), (True, True))  # walk y clipped to 1
    assert pad.calls[-1] == ((1.0, 1.0), (0.25, -0.5), X360_BUTTONS["A"], (0.0, 1.0))
    device.apply(np.array([0.0, 0.0, 0.0, 0.0]), (False, True))
    assert pad.calls[-1] == ((0.0, 0.0), (0.0, 0.0), 0, (0.0, 1.0))
    device.close()
    assert pad.calls[-1] == ((0.0, 0.0), (0.0, 0.0), 0, (0.0, 0.0))
    with pytest.raises(ValueError, match="unknown gamepad button"):
        GamepadDevice(buttons=("Z",), pad=FakePad())


def test_gamepad_errors_say_what_to_install(tmp_path):
    assert "sudo modprobe uinput" in uinput_problem("/dev/uinput", exists=False, writable=False)
    denied = uinput_problem("/dev/uinput", exists=True, writable=False)
    assert "udev rule" in denied and "usermod -aG input" in denied and "\n" not in denied
    assert uinput_problem("/dev/uinput", exists=True, writable=True) is None
    with pytest.raises(ScreenSetupError, match="modprobe uinput"):
        make_x360_pad(uinput_path=str(tmp_path / "uinput"))


def test_recording_device_tracks_state():
    device = RecordingDevice()
    device.apply(np.array([0, 0, 0, 1.0]), (True,))
    assert not device.is_neutral and device.buttons == (True,)
    device.neutral()
    assert device.is_neutral
    device.close()
    assert [call[0] for call in device.calls] == ["apply", "neutral", "neutral", "close"]


def test_guarded_device_rejects_unknown_kind():
    with pytest.raises(ValueError, match="'keyboard' or 'gamepad'"):
        GuardedDevice("joystick")
