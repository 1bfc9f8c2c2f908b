"""The test game: the built-in maze's first-person view in a pygame-ce window you can play.

    python -m wanderlust.envs.screen.testgame [--size 320x240] [--seed 0] [--state-file PATH]

Window title "wanderlust maze". W/S walk, A/D strafe, mouse x (or Left/Right) turns, mouse y
(or Up/Down) looks up/down, Escape or closing the window quits. With ``--state-file`` the
game writes its state after every frame (atomically, JSON): ``frame``, ``pose`` [x, y,
heading, pitch] (exact floats), ``keys`` (held game keys), ``mouse`` (total relative motion
[dx, dy] received), ``size`` [W, H], ``seed``, ``maze_size``, ``fov``. Tests compare the
window's pixels with ``render_view(...)`` of that pose, and check that XTest input moves it.

The mouse is in relative mode (pointer hidden and kept in the window), like a first-person
game: on a desktop, press Escape to quit and get the pointer back.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from wanderlust.envs.maze.env import MazeEnv

TITLE = "wanderlust maze"
TURN_PER_PIXEL = 0.01
"""Radians of heading per pixel of mouse x motion (right turns right)."""
PITCH_PER_PIXEL = 0.005
"""Radians of pitch per pixel of mouse y motion (up looks up)."""
GAME_KEYS = ("w", "a", "s", "d", "left", "right", "up", "down")


def parse_size(text: str) -> tuple[int, int]:
    """``"WxH"`` -> (W, H), each in [16, 512]; ValueError otherwise."""
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"--size must be WxH in pixels (e.g. 320x240), got {text!r}") from None
    if not (16 <= width <= 512 and 16 <= height <= 512):
        raise ValueError(f"--size sides must be in [16, 512], got {text!r}")
    return width, height


def make_maze(size: tuple[int, int], seed: int, maze_size: int, fov: float) -> MazeEnv:
    """The game's maze: fixed layout from ``seed``, frames of ``size = (W, H)``, reset."""
    width, height = size
    env = MazeEnv(
        size=maze_size, obs_size=(height, width), max_steps=2**62,
        fixed_layout=True, layout_seed=seed, fov=fov,
    )
    env.reset(seed=seed)
    return env


def render_view(state: dict) -> np.ndarray:
    """The frame ``[H, W, 3]`` the game shows for a state-file dict (same maze, same pose)."""
    env = make_maze(tuple(state["size"]), state["seed"], state["maze_size"], state["fov"])
    x, y, heading, pitch = state["pose"]
    env.set_pose(x, y, heading, pitch)
    frame, *_ = env.step(np.zeros(4, dtype=np.float32))  # zero sticks: the pose is unchanged
    return frame


def sticks_from_keys(held: set[str]) -> np.ndarray:
    """float32 ``[4]`` maze sticks [camera x, camera y, walk x, walk y] from held game keys."""
    def axis(negative: str, positive: str) -> float:
        return float(positive in held) - float(negative in held)

    return np.array(
        [axis("left", "right"), axis("down", "up"), axis("a", "d"), axis("s", "w")], dtype=np.float32
    )


def write_state(path: Path, state: dict) -> None:
    """Write ``state`` as JSON atomically (readers never see a half-written file)."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(state))
    os.replace(temporary, path)


def run(args: argparse.Namespace) -> None:
    """Open the window and play until Escape, window close, or ``--seconds``."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import pygame

    width, height = parse_size(args.size)
    env = make_maze((width, height), args.seed, args.maze_size, args.fov)
    pygame.display.init()
    screen = pygame.display.set_mode((width, height))
    pygame.display.set_caption(TITLE)
    try:
        pygame.mouse.set_relative_mode(True)
    except pygame.error:  # e.g. SDL's dummy driver: motion events still arrive, unconfined
        pass
    key_codes = {name: pygame.key.key_code(name) for name in GAME_KEYS}
    clock, frame_index, mouse_total = pygame.time.Clock(), 0, [0, 0]
    started = time.monotonic()
    state_path = Path(args.state_file) if args.state_file else None
    running = True
    while running:
        turn = pitch = 0.0
        for event in pygame.event.get():
            if event.type == pygame.QUIT or (event.type == pygame.KEYDOWN and event.key == pygame.K_ESCAPE):
                running = False
            elif event.type == pygame.MOUSEMOTION:
                mouse_total[0] += event.rel[0]
                mouse_total[1] += event.rel[1]
                turn += event.rel[0] * TURN_PER_PIXEL
                pitch -= event.rel[1] * PITCH_PER_PIXEL
        pressed = pygame.key.get_pressed()
        held = {name for name, code in key_codes.items() if pressed[code]}
        if turn or pitch:
            x, y, heading, old_pitch = env.pose
            env.set_pose(x, y, heading + turn, old_pitch + pitch)
        frame, *_ = env.step(sticks_from_keys(held))
        pygame.surfarray.blit_array(screen, frame.swapaxes(0, 1))
        pygame.display.flip()
        frame_index += 1
        if state_path is not None:
            write_state(state_path, {
                "frame": frame_index, "pose": [float(v) for v in env.pose], "keys": sorted(held),
                "mouse": mouse_total, "size": [width, height], "seed": args.seed,
                "maze_size": args.maze_size, "fov": args.fov,
            })
        if args.seconds and time.monotonic() - started > args.seconds:
            running = False
        clock.tick(args.fps)
    pygame.quit()


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m wanderlust.envs.screen.testgame", description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="320x240", help="window WxH in pixels (default 320x240)")
    parser.add_argument("--seed", type=int, default=0, help="maze layout and start seed")
    parser.add_argument("--maze-size", type=int, default=5, help="cells per side")
    parser.add_argument("--fov", type=float, default=66.0, help="horizontal field of view, degrees")
    parser.add_argument("--fps", type=int, default=30, help="frames per second (one maze step each)")
    parser.add_argument("--state-file", default=None, help="write the game state here every frame (JSON)")
    parser.add_argument("--seconds", type=float, default=0.0, help="quit after this long (0: never)")
    args = parser.parse_args(argv)
    try:
        parse_size(args.size)
    except ValueError as error:
        parser.error(str(error))
    if not math.isfinite(args.fov) or args.fps < 1:
        parser.error("--fov must be finite and --fps >= 1")
    headless = os.environ.get("SDL_VIDEODRIVER") in ("dummy", "offscreen")
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or headless):
        parser.error("no X display: set DISPLAY, or start one: Xvfb :99 -screen 0 1024x768x24 & export DISPLAY=:99")
    run(args)


if __name__ == "__main__":
    main()
