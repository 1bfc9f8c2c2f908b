"""Real-time control of a live window with learning running: wanderlust's actor/learner runner vs
the original agent's loop, measured in the same run.

A private Xvfb display (started here, ``-nolisten tcp``, 1920x1080) shows the test game window
(``python -m wanderlust.envs.screen.testgame``, title "wanderlust maze", 320x240). Every row sends
its inputs through the same keyboard+mouse device (XTest, in the guarded helper process, as
``wanderlust train screen --input keyboard`` does). Rows:

- ``pyautogui alone``: ``pyautogui.screenshot()`` of the whole screen in a loop (the original
  capture path, no learning). On Linux pyautogui needs gnome-screenshot or scrot installed; with
  gnome-screenshot it calls Pillow's ``ImageGrab.grab()`` (also its Windows path), which is what
  is timed here (``pyscreeze.GNOMESCREENSHOT_EXISTS = True``).
- ``seed loop``: the structure of the original TensorFlow agent (``shared/seed``), in torch:
  screenshot -> resize to 256x256 -> the seed's CNN (conv 16/32/64 + pools, dense 128 x3, 4
  outputs) -> inputs -> pixel novelty against the last 50 frames -> one training step (backward +
  SGD) per env step, once with 1 torch thread and once with all cores (on a loaded machine all
  cores can be the slower). Its 0.1 s sleep is left out (it would only make it slower), so this
  is the fastest that structure runs here; it has no target rate.
- ``wanderlust @ 15 Hz`` and ``@ 30 Hz``: ``ScreenEnv`` on the window (mss, 84x84 RGB, frame
  stack 4, F12 stop hotkey polled) + ``train_realtime`` (Nature CNN, episodic novelty, T = 64),
  the learner updating all along.

Latency is capture -> policy -> input: from the start of a frame grab to the end of the input
call that acts on it. Late steps: ticks more than 10 % of a period after their deadline (the
env's own count).

    python benchmarks/realtime.py              # 20 s per row
    python benchmarks/realtime.py --seconds 8  # quicker
    python benchmarks/realtime.py --rates 15,30,60   # other control rates (the last is compared)
    python benchmarks/realtime.py --threads    # also: actor latency with / without the thread split
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import _common  # noqa: F401  (puts src/ on sys.path)
import numpy as np
from _common import markdown_table

TITLE = "wanderlust maze"
SCREEN_SIZE = (1920, 1080)


@dataclass
class Row:
    """One measured loop."""

    name: str
    target_hz: float
    achieved_hz: float
    late_percent: float
    latency_p50_ms: float
    latency_p99_ms: float
    updates: int
    dropped: int


def percentiles_ms(seconds: list[float]) -> tuple[float, float]:
    """(p50, p99) in milliseconds; nan when empty."""
    if not seconds:
        return float("nan"), float("nan")
    p50, p99 = np.percentile(np.asarray(seconds) * 1000.0, [50, 99])
    return float(p50), float(p99)


# ---- the display and the game ------------------------------------------------------------

def start_game(display: str) -> subprocess.Popen:
    """The test game on ``display``, focused; waits for its window."""
    from Xlib import X

    from wanderlust.envs.screen.windows import find_window, x11_windows
    from wanderlust.envs.screen.x11 import open_display

    env = dict(os.environ, DISPLAY=display, SDL_VIDEODRIVER="x11", PYGAME_HIDE_SUPPORT_PROMPT="1",
               PYTHONPATH=str(_common.SRC_DIR))
    game = subprocess.Popen([sys.executable, "-m", "wanderlust.envs.screen.testgame"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    connection = open_display(display)
    try:
        deadline = time.monotonic() + 30.0
        while True:
            try:
                window = find_window(x11_windows(connection), title=TITLE)
                break
            except ValueError:
                if time.monotonic() > deadline or game.poll() is not None:
                    game.kill()
                    sys.exit("the test game window did not appear")
                time.sleep(0.1)
        connection.create_resource_object("window", window.handle).set_input_focus(X.RevertToParent, X.CurrentTime)
        connection.sync()
    finally:
        connection.close()
    time.sleep(0.5)
    return game


# ---- pyautogui and the seed loop -----------------------------------------------------------

def import_pyautogui():
    import pyautogui
    import pyscreeze

    pyscreeze.GNOMESCREENSHOT_EXISTS = True  # Pillow's ImageGrab path (see the module docstring)
    return pyautogui


def measure_pyautogui(seconds: float) -> Row:
    pyautogui = import_pyautogui()
    shots, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        pyautogui.screenshot()
        shots += 1
    rate = shots / (time.perf_counter() - start)
    return Row("pyautogui alone (screenshot only)", float("nan"), rate, float("nan"), float("nan"), float("nan"), 0, 0)


def seed_model(size: int = 256):
    """The seed's Keras model in torch: [B, 3, 256, 256] floats in [0, 255] -> [B, 4]."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * (size // 8) ** 2, 128), nn.Linear(128, 128), nn.Linear(128, 128),
        nn.Linear(128, 4),
    )


def measure_seed_loop(seconds: float, device, threads: int) -> Row:
    """The original loop, step by step in one thread, with a training step every step."""
    import torch

    main_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    pyautogui = import_pyautogui()
    model = seed_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    history: list[torch.Tensor] = []
    latencies, steps, start = [], 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        captured = time.perf_counter()
        image = pyautogui.screenshot().resize((256, 256))
        frame = torch.from_numpy(np.asarray(image, dtype=np.float32)).permute(2, 0, 1).unsqueeze(0)
        outputs = model(frame / 255.0)
        device.apply(outputs[0].detach().clamp(-1, 1).numpy())
        latencies.append(time.perf_counter() - captured)
        gray = frame[0].mul(torch.tensor([0.299, 0.587, 0.114]).view(3, 1, 1)).sum(0)
        history = (history + [gray])[-50:]
        novelty = torch.stack(history).sub(gray).abs().sum(dim=(1, 2)).mean()
        # The original loss reaches no weight (DESIGN.md section 1); a differentiable stand-in
        # scaled by the novelty makes backward + step do the work a per-step update costs.
        loss = (1.0 - novelty / 1e7) * outputs.square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        steps += 1
    rate = steps / (time.perf_counter() - start)
    torch.set_num_threads(main_threads)
    p50, p99 = percentiles_ms(latencies)
    return Row(f"seed loop, {threads} torch thread{'s' if threads > 1 else ''} (per-step training)", float("nan"),
               rate, float("nan"), p50, p99, steps, 0)


# ---- wanderlust -----------------------------------------------------------------------------

class TimedFrames:
    """A FrameSource proxy that remembers when the latest grab started."""

    def __init__(self, inner) -> None:
        self.inner, self.grab_started = inner, None

    def grab(self):
        self.grab_started = time.perf_counter()
        return self.inner.grab()

    def close(self) -> None:
        self.inner.close()


class TimedDevice:
    """An InputDevice proxy: capture -> input latency of every action that follows a grab."""

    def __init__(self, inner, frames: TimedFrames) -> None:
        self.inner, self.frames, self.latencies = inner, frames, []

    def apply(self, action, buttons=()) -> None:
        self.inner.apply(action, buttons)
        if self.frames.grab_started is not None:
            self.latencies.append(time.perf_counter() - self.frames.grab_started)
            self.frames.grab_started = None

    def tap(self, name: str) -> None:
        self.inner.tap(name)

    def neutral(self) -> None:
        self.inner.neutral()

    def close(self) -> None:
        self.inner.close()


def measure_wanderlust(hz: float, seconds: float, display: str) -> Row:
    import gymnasium as gym

    from wanderlust.algo.realtime import train_realtime
    from wanderlust.envs.factory import ChannelsFirstStack
    from wanderlust.envs.screen import ScreenConfig, make_screen_env
    from wanderlust.runtime.config import make_preset

    config = make_preset("default")
    config.env.num_envs, config.env.frame_stack = 1, 4
    config.ppo.num_steps, config.ppo.num_minibatches = 64, 4
    config.total_steps, config.checkpoint_every = 10**9, 10**9
    screen = make_screen_env(window=TITLE, input_kind="keyboard", hotkey="F12", display_name=display,
                             config=ScreenConfig(obs_size=(84, 84), hz=hz, episode_seconds=3600.0))
    frames = TimedFrames(screen.frames)
    device = TimedDevice(screen.device, frames)
    screen.frames, screen.device = frames, device
    env = ChannelsFirstStack(gym.wrappers.FrameStackObservation(screen, config.env.frame_stack))
    with tempfile.TemporaryDirectory() as run_dir:
        result = train_realtime(config, env, Path(run_dir), show_progress=False, max_seconds=seconds)
    p50, p99 = percentiles_ms(device.latencies)
    late = 100.0 * result.late_steps / max(result.actor_steps, 1)
    return Row(f"wanderlust @ {hz:g} Hz (learning)", hz, result.actor_hz, late, p50, p99, result.updates,
               result.dropped_rollouts)


# ---- the thread split ---------------------------------------------------------------------

def measure_thread_split(seconds: float) -> list[list[object]]:
    """Actor forward latency (1 frame, Nature CNN 12x84x84) at 30 Hz while a learner thread runs
    PPO updates, for several (actor threads, learner threads) choices."""
    import torch
    from gymnasium import spaces

    from wanderlust.agent.actor_critic import ActorCritic
    from wanderlust.algo.ppo import PPOBatch, PPOConfig, ppo_update
    from wanderlust.algo.realtime import set_thread_torch_threads

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    shape, space = (12, 84, 84), spaces.Box(-1, 1, (4,), np.float32)
    rows, main_threads = [], torch.get_num_threads()
    for actor_threads, learner_threads in ((1, max(1, cores - 1)), (cores, cores), (1, cores)):
        stop, latencies, minibatches = threading.Event(), [], [0]

        def actor(threads=actor_threads):
            set_thread_torch_threads(threads)
            policy, obs, tick = ActorCritic(shape, space, "nature"), torch.zeros((1, *shape), dtype=torch.uint8), 0.0
            while not stop.is_set():
                began = time.perf_counter()
                with torch.inference_mode():
                    policy.act(obs)
                latencies.append(time.perf_counter() - began)
                tick = max(tick + 1 / 30, time.perf_counter())
                time.sleep(max(0.0, tick - time.perf_counter()))

        def learner(threads=learner_threads):
            set_thread_torch_threads(threads)
            agent = ActorCritic(shape, space, "nature")
            optimizer, size = torch.optim.Adam(agent.parameters(), 1e-4), 64
            batch = PPOBatch(torch.zeros((size, *shape), dtype=torch.uint8), torch.randn(size, 4),
                             *(torch.randn(size) for _ in range(7)))
            generator = torch.Generator().manual_seed(0)
            while not stop.is_set():
                ppo_update(agent, optimizer, batch, PPOConfig(num_minibatches=4, update_epochs=1), generator)
                minibatches[0] += 4

        threads = [threading.Thread(target=actor), threading.Thread(target=learner)]
        for thread in threads:
            thread.start()
        time.sleep(seconds)
        stop.set()
        for thread in threads:
            thread.join()
        torch.set_num_threads(main_threads)
        p50, p99 = percentiles_ms(latencies[5:])
        rows.append([actor_threads, learner_threads, p50, p99, minibatches[0] / seconds])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds per row (default 20)")
    parser.add_argument("--rates", default="15,30", help="wanderlust control rates in Hz (default 15,30)")
    parser.add_argument("--threads", action="store_true", help="also measure the actor/learner thread split")
    args = parser.parse_args()
    if args.seconds <= 0:
        parser.error("--seconds must be > 0")
    try:
        rates = [float(rate) for rate in args.rates.split(",")]
    except ValueError:
        parser.error(f"--rates must be numbers separated by commas, got {args.rates!r}")
    if not rates or not all(0 < rate <= 240 for rate in rates):
        parser.error("--rates must be in (0, 240] Hz")
    from wanderlust.envs.screen.errors import ScreenSetupError
    from wanderlust.envs.screen.xvfb import start_xvfb

    try:
        xvfb, display = start_xvfb(*SCREEN_SIZE)
    except ScreenSetupError as error:
        sys.exit(str(error))
    previous_display = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = display  # pyautogui and mss read it; inputs only go to this private server
    game = start_game(display)
    rows: list[Row] = []
    try:
        from wanderlust.envs.screen import GuardedDevice

        rows.append(measure_pyautogui(min(args.seconds, 5.0)))
        device = GuardedDevice("keyboard", hotkey=None, display_name=display)
        try:
            for threads in sorted({1, os.cpu_count() or 1}):
                rows.append(measure_seed_loop(args.seconds, device, threads))
        finally:
            device.close()
        for hz in rates:
            rows.append(measure_wanderlust(hz, args.seconds, display))
    finally:
        game.terminate()
        game.wait(timeout=10)
        xvfb.terminate()
        xvfb.wait(timeout=10)
        if previous_display is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = previous_display

    print(f"\nLive window on Xvfb {SCREEN_SIZE[0]}x{SCREEN_SIZE[1]}x24, {os.cpu_count()} cores, {args.seconds:g} s per row\n")
    print(markdown_table(
        ["loop", "target Hz", "achieved Hz", "late steps %", "latency p50 ms", "latency p99 ms", "updates", "dropped"],
        [[r.name, r.target_hz, r.achieved_hz, r.late_percent, r.latency_p50_ms, r.latency_p99_ms, r.updates,
          r.dropped] for r in rows],
    ))
    shots, fast = rows[0], rows[-1]
    seed = max((row for row in rows if row.name.startswith("seed")), key=lambda row: row.achieved_hz)
    print(f"\nwanderlust @ {fast.target_hz:g} Hz: {fast.achieved_hz / seed.achieved_hz:.1f}x the faster seed loop's step rate, "
          f"p99 latency {seed.latency_p99_ms / fast.latency_p99_ms:.1f}x lower; "
          f"pyautogui alone: {shots.achieved_hz:.0f} screenshots/s")
    held = fast.achieved_hz >= 0.97 * fast.target_hz and fast.late_percent < 5.0
    print(f"target ({fast.target_hz:g} Hz held, late steps < 5 %): {'met' if held else 'NOT met'}")
    if args.threads:
        print("\nActor forward latency at 30 Hz while the learner trains (thread split):\n")
        print(markdown_table(["actor threads", "learner threads", "actor p50 ms", "actor p99 ms", "learner minibatches/s"],
                             measure_thread_split(min(args.seconds, 8.0))))


if __name__ == "__main__":
    main()
