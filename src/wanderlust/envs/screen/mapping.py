"""Keyboard + mouse mapping of the gamepad-style action (pure functions and the file loader).

The action is the maze's / the seed's four stick axes ``[camera x, camera y, walk x, walk y]``
in [-1, 1] plus optional buttons. Defaults suit first-person games: W/S walk forward/back,
A/D strafe, the mouse turns (camera x) and looks up/down (camera y).

Mapping file (JSON; TOML too on Python >= 3.11), every field optional::

    {"forward": "w", "back": "s", "left": "a", "right": "d", "walk_threshold": 0.3,
     "camera": "mouse", "mouse_x_pixels": 20, "mouse_y_pixels": 10, "invert_y": false,
     "turn_left": "Left", "turn_right": "Right", "look_up": "Up", "look_down": "Down",
     "camera_threshold": 0.3, "buttons": ["space", "mouse_left"]}

Key names are X keysym names (``w``, ``space``, ``Left``, ``F1``, ``Shift_L``, ``Return``);
mouse buttons are ``mouse_left``, ``mouse_middle``, ``mouse_right``. The pynput backend
(Windows) takes the same names for the keys games use: letters, digits, punctuation names
(``comma``, ``minus``, ...), ``F1``-``F24``, arrows, modifiers, editing keys
(``pynput_input.pynput_key`` lists them).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

CAMERA_MODES = ("mouse", "keys")


@dataclass(frozen=True)
class KeyMapping:
    """How sticks and buttons become keys and mouse motion (defaults: first-person games)."""

    forward: str = "w"
    """Key held while walk y > walk_threshold."""
    back: str = "s"
    """Key held while walk y < -walk_threshold."""
    left: str = "a"
    """Key held while walk x < -walk_threshold (strafe left)."""
    right: str = "d"
    """Key held while walk x > walk_threshold (strafe right)."""
    walk_threshold: float = 0.3
    """Stick deflection beyond which a walk key is held, in [0, 1)."""
    camera: str = "mouse"
    """'mouse': camera axes move the mouse; 'keys': they hold the turn/look keys."""
    mouse_x_pixels: float = 20.0
    """Mouse pixels per step at full camera x (right +)."""
    mouse_y_pixels: float = 10.0
    """Mouse pixels per step at full camera y (look up + moves the mouse up)."""
    invert_y: bool = False
    """Flip the vertical mouse direction (games with inverted look)."""
    turn_left: str = "Left"
    """Key held while camera x < -camera_threshold (camera='keys')."""
    turn_right: str = "Right"
    """Key held while camera x > camera_threshold (camera='keys')."""
    look_up: str = "Up"
    """Key held while camera y > camera_threshold (camera='keys')."""
    look_down: str = "Down"
    """Key held while camera y < -camera_threshold (camera='keys')."""
    camera_threshold: float = 0.3
    """Camera deflection beyond which a turn/look key is held (camera='keys'), in [0, 1)."""
    buttons: tuple[str, ...] = field(default_factory=tuple)
    """Key or mouse button held while button i of the action is pressed."""

    def __post_init__(self) -> None:
        for name in ("walk_threshold", "camera_threshold"):
            value = getattr(self, name)
            if not 0.0 <= float(value) < 1.0:
                raise ValueError(f"mapping {name} must be in [0, 1), got {value!r}")
        if self.camera not in CAMERA_MODES:
            raise ValueError(f"mapping camera must be 'mouse' or 'keys', got {self.camera!r}")
        for name in ("mouse_x_pixels", "mouse_y_pixels"):
            value = getattr(self, name)
            if not math.isfinite(float(value)) or float(value) < 0:
                raise ValueError(f"mapping {name} must be a number >= 0, got {value!r}")

    def key_names(self) -> tuple[str, ...]:
        """Every key / mouse-button name this mapping can press."""
        keys = [self.forward, self.back, self.left, self.right, *self.buttons]
        if self.camera == "keys":
            keys += [self.turn_left, self.turn_right, self.look_up, self.look_down]
        return tuple(dict.fromkeys(keys))


def mapping_from_dict(values: dict[str, Any], source: str = "mapping") -> KeyMapping:
    """Build a KeyMapping from file contents; ValueError naming the bad field otherwise."""
    if not isinstance(values, dict):
        raise ValueError(f"{source}: expected a table/object of fields, got {type(values).__name__}")
    fields = {f.name: f for f in dataclasses.fields(KeyMapping)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"{source}: unknown field(s) {unknown}; valid fields: {sorted(fields)}")
    converted: dict[str, Any] = {}
    for name, value in values.items():
        default = getattr(KeyMapping(), name)
        if name == "buttons":
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise ValueError(f"{source}: buttons must be a list of key names, got {value!r}")
            converted[name] = tuple(value)
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise ValueError(f"{source}: {name} must be true or false, got {value!r}")
            converted[name] = value
        elif isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{source}: {name} must be a number, got {value!r}")
            converted[name] = float(value)
        else:
            if not isinstance(value, str) or not value:
                raise ValueError(f"{source}: {name} must be a key name string, got {value!r}")
            converted[name] = value
    try:
        return KeyMapping(**converted)
    except ValueError as error:
        raise ValueError(f"{source}: {error}") from None


def load_mapping(path: str | Path) -> KeyMapping:
    """Read a mapping file (``.json``, or ``.toml`` on Python >= 3.11); one-line errors."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"mapping file {str(path)!r} does not exist; pass a .json or .toml file")
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".toml":
        if sys.version_info < (3, 11):
            raise ValueError(f"{path}: TOML mapping files need Python >= 3.11; use JSON")
        import tomllib

        try:
            values = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"{path}: not valid TOML ({error})") from None
    else:
        try:
            values = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    return mapping_from_dict(values, str(path))


def held_keys(
    action: np.ndarray, buttons: Sequence[bool], mapping: KeyMapping
) -> frozenset[str]:
    """Keys that must be down for ``action`` ``[4]`` and ``buttons`` ``[B]`` (B <= len(mapping.buttons)).

    A key is held while its axis is strictly beyond the threshold in its direction.
    """
    camera_x, camera_y, walk_x, walk_y = (float(v) for v in action)
    walk, keys = mapping.walk_threshold, set()
    if walk_y > walk:
        keys.add(mapping.forward)
    if walk_y < -walk:
        keys.add(mapping.back)
    if walk_x > walk:
        keys.add(mapping.right)
    if walk_x < -walk:
        keys.add(mapping.left)
    if mapping.camera == "keys":
        turn = mapping.camera_threshold
        if camera_x > turn:
            keys.add(mapping.turn_right)
        if camera_x < -turn:
            keys.add(mapping.turn_left)
        if camera_y > turn:
            keys.add(mapping.look_up)
        if camera_y < -turn:
            keys.add(mapping.look_down)
    if len(buttons) > len(mapping.buttons):
        raise ValueError(
            f"action has {len(buttons)} buttons but the mapping names {len(mapping.buttons)}; "
            "add them to the mapping's 'buttons' list"
        )
    keys.update(name for name, down in zip(mapping.buttons, buttons) if down)
    return frozenset(keys)


def mouse_step(
    camera_x: float, camera_y: float, mapping: KeyMapping, remainder: tuple[float, float]
) -> tuple[int, int, tuple[float, float]]:
    """Whole-pixel mouse motion ``(dx, dy)`` for one step, and the sub-pixel remainder to carry.

    dx = camera_x * mouse_x_pixels; dy = -camera_y * mouse_y_pixels (look up moves the mouse
    up, screen y grows downwards), negated with ``invert_y``. Fractions accumulate across
    steps so small deflections still turn. No motion when camera='keys'.
    """
    if mapping.camera != "mouse":
        return 0, 0, (0.0, 0.0)
    sign_y = 1.0 if mapping.invert_y else -1.0
    want_x = remainder[0] + float(camera_x) * mapping.mouse_x_pixels
    want_y = remainder[1] + sign_y * float(camera_y) * mapping.mouse_y_pixels
    dx, dy = int(round(want_x)), int(round(want_y))
    return dx, dy, (want_x - dx, want_y - dy)


def key_changes(
    before: frozenset[str], after: frozenset[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(to_release, to_press)``, each sorted, to go from held set ``before`` to ``after``."""
    return tuple(sorted(before - after)), tuple(sorted(after - before))
