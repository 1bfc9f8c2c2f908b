"""Training configuration: nested dataclasses, named presets, validation, JSON round trip.

The resolved config is saved in every run folder (``config.json``) and is what ``--resume``,
``play`` and ``eval`` rebuild the agent from.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Any

from wanderlust.agent.actor_critic import check_action_bins, check_log_std_init
from wanderlust.agent.noise import check_noise_hold
from wanderlust.agent.encoders import ENCODER_NAMES
from wanderlust.algo.ppo import PPOConfig
from wanderlust.novelty import NOVELTY_NAMES, NoveltyConfig
from wanderlust.runtime.presets import BENCHMARK_PRESETS


SCREEN_ID = "screen"
"""The env id of a live game captured from the screen."""


@dataclass
class ScreenSettings:
    """A live game seen through the screen (env id ``screen``); see docs/play-your-own-game.md."""

    window: str | None = None
    """Capture the window whose title contains this text (case-insensitive)."""
    window_class: str | None = None
    """Or the window whose WM_CLASS / Win32 class contains this text."""
    region: str | None = None
    """Or a screen region 'x,y,w,h' in pixels."""
    monitor: int | None = None
    """Or an mss monitor index (1 = primary); used when no window or region is given."""
    input: str = "keyboard"
    """Input device: 'keyboard' (keyboard + mouse through XTest) or 'gamepad' (virtual Xbox 360 pad)."""
    mapping: str | None = None
    """Keyboard mapping file (JSON/TOML); None: WASD walk, mouse look."""
    stop_key: str = "F12"
    """Hotkey that stops the agent and releases every input."""
    hz: float = 15.0
    """Control rate: agent steps per second."""
    episode_seconds: float = 300.0
    """A live game has no reset: episodes end (truncate) after this many seconds."""
    frame_size: int = 84
    """Captured frames are resized to frame_size x frame_size."""


@dataclass
class EnvConfig:
    """Which game to play and how its frames are preprocessed."""

    env_id: str = "wanderlust/Maze-v0"
    """A Gymnasium id (``wanderlust/Maze-v0``, ``ALE/MontezumaRevenge-v5``, ...)."""
    num_envs: int = 8
    """Number of environments stepped in parallel (N)."""
    vector_mode: str = "sync"
    """``sync`` (one process) or ``async`` (one subprocess per env)."""
    frame_size: int | None = None
    """Resize frames to frame_size x frame_size; None keeps the env's size."""
    grayscale: bool = False
    """Convert RGB frames to one grayscale channel."""
    frame_stack: int = 4
    """Number of most recent frames stacked along channels."""
    max_episode_steps: int | None = None
    """Truncate episodes after this many steps; None keeps the env's own limit."""
    maze_size: int = 9
    """Cells per side of the built-in maze (maze envs only)."""
    maze_obs_size: int = 64
    """Rendered view size of the built-in maze (maze envs only)."""
    maze_layout_seed: int | None = None
    """Keep one maze, made from this seed, for every episode (maze envs only); None: a new maze each episode."""
    maze_fixed_start: bool = False
    """Start every episode in the top-left cell (maze envs only); False: a random cell each episode."""
    action_repeat: int | None = None
    """Frames per agent step (ALE and VizDoom ids only); None: 4 for Atari with preprocessing, else the env's own."""
    atari_preprocessing: bool = True
    """ALE ids: Gymnasium's AtariPreprocessing (noop reset, frame skip + max-pool, resize, frameskip=1 inside)."""
    minigrid_tile_size: int = 8
    """MiniGrid ids: pixels per tile of the RGB 7x7-tile egocentric view (8 gives 56x56 frames)."""
    vizdoom_resolution: str | None = None
    """VizDoom ids: render size such as '160x120'; None keeps the scenario's (320x240)."""
    screen: ScreenSettings = field(default_factory=ScreenSettings)
    """Env id ``screen`` only: which window to capture and how to send input."""


@dataclass
class TrainConfig:
    """Everything that defines a training run."""

    env: EnvConfig = field(default_factory=EnvConfig)
    """The game and its preprocessing."""
    ppo: PPOConfig = field(default_factory=PPOConfig)
    """PPO hyperparameters."""
    novelty_name: str = "episodic"
    """Intrinsic reward: pixel, rnd, icm, episodic or none."""
    novelty: NoveltyConfig = field(default_factory=NoveltyConfig)
    """Hyperparameters of every novelty module (only the chosen one is used)."""
    normalize_intrinsic: bool = True
    """Divide intrinsic rewards by the running std of their discounted return (as RND)."""
    encoder: str = "nature"
    """Policy encoder preset: nature, impala or seed."""
    center_pixels: bool = False
    """Feed the policy encoder's first layer x/255 - 0.5 instead of x/255 (keeps first-layer ReLUs alive).
    False here, so a run folder saved before this field existed loads as it trained; the ``default``
    preset sets it True."""
    action_bins: int = 0
    """Box actions: 0 = squashed Gaussian; K >= 2 = K evenly spaced values per axis (factorised categorical)."""
    log_std_init: float = 0.0
    """Squashed Gaussian: initial log-std of the pre-tanh noise (0: std 1, near-uniform sticks)."""
    noise_hold: int = 1
    """Squashed Gaussian sticks: steps each env keeps its exploration noise (1: fresh every step; SB3's
    sde_sample_freq); Discrete and binned policies always draw fresh. The ``default`` preset sets 8."""
    total_steps: int = 200_000
    """Environment steps to train for (summed over envs)."""
    seed: int = 1
    """Seed for envs, networks and sampling."""
    device: str = "cpu"
    """Torch device for learning (cpu, cuda, cuda:1, auto)."""
    torch_threads: int = 0
    """torch.set_num_threads; 0 lets wanderlust pick (all cores)."""
    checkpoint_every: int = 50_000
    """Write a checkpoint every this many env steps (and always at the end)."""
    keep_checkpoints: int = 3
    """How many recent checkpoints to keep."""
    log_every: int = 1
    """Log metrics every this many PPO updates."""
    image_every: int = 10
    """Log TensorBoard images (coverage heatmap, most/least novel frames) every this many updates; 0 = never."""
    workers: int = 0
    """Rollout workers, each with num_envs / workers envs and a policy copy; 0 steps the envs in this process."""
    ray_address: str | None = None
    """Ray actors as workers: 'local' (a private loopback cluster), 'HOST:PORT' (join one); None: local processes."""
    ray_dashboard: bool = False
    """With ray_address 'local': also start Ray's dashboard (on 127.0.0.1 only)."""
    serial_workers: bool = False
    """Collect the workers' shares one after another (local ones in this process): for debugging, exact tests."""

    def validate(self) -> None:
        """Raise ValueError with a one-line message for any bad value."""
        if self.novelty_name not in NOVELTY_NAMES:
            raise ValueError(f"unknown novelty '{self.novelty_name}'; choose one of {', '.join(NOVELTY_NAMES)}")
        if self.encoder not in ENCODER_NAMES:
            raise ValueError(f"unknown encoder '{self.encoder}'; choose one of {', '.join(ENCODER_NAMES)}")
        check_action_bins(self.action_bins)
        check_log_std_init(self.log_std_init)
        check_noise_hold(self.noise_hold)
        _positive("total_steps", self.total_steps)
        _positive("checkpoint_every", self.checkpoint_every)
        _positive("keep_checkpoints", self.keep_checkpoints)
        _positive("log_every", self.log_every)
        if not isinstance(self.image_every, int) or self.image_every < 0:
            raise ValueError(f"image_every must be an integer >= 0 (0 = no images), got {self.image_every!r}")
        _positive("num_envs", self.env.num_envs)
        _positive("frame_stack", self.env.frame_stack)
        if self.torch_threads < 0:
            raise ValueError(f"torch_threads must be >= 0, got {self.torch_threads}")
        if self.env.vector_mode not in ("sync", "async"):
            raise ValueError(f"vector_mode must be 'sync' or 'async', got '{self.env.vector_mode}'")
        if self.env.frame_size is not None and not 8 <= self.env.frame_size <= 1024:
            raise ValueError(f"frame_size must be between 8 and 1024, got {self.env.frame_size}")
        if self.env.max_episode_steps is not None:
            _positive("max_episode_steps", self.env.max_episode_steps)
        if self.env.action_repeat is not None:
            _positive("action_repeat", self.env.action_repeat)
        _positive("minigrid_tile_size", self.env.minigrid_tile_size)
        resolution = self.env.vizdoom_resolution
        if resolution is not None and not re.fullmatch(r"\d+x\d+", resolution.lower()):
            raise ValueError(f"vizdoom_resolution must look like '160x120', got '{self.env.vizdoom_resolution}'")
        if self.env.env_id == SCREEN_ID:
            if self.env.num_envs != 1:
                raise ValueError(f"a live screen is one env: use --num-envs 1, not {self.env.num_envs}")
            if self.env.screen.input not in ("keyboard", "gamepad"):
                raise ValueError(f"--input must be 'keyboard' or 'gamepad', got '{self.env.screen.input}'")
            if not 0 < self.env.screen.hz <= 240:
                raise ValueError(f"--hz must be in (0, 240], got {self.env.screen.hz}")
            if self.env.screen.episode_seconds <= 0:
                raise ValueError(f"--episode-seconds must be positive, got {self.env.screen.episode_seconds}")
        self._validate_workers()
        self.ppo.validate()
        batch = self.ppo.num_steps * self.env.num_envs
        if batch % self.ppo.num_minibatches:
            raise ValueError(
                f"num_steps * num_envs ({batch}) must be divisible by num_minibatches ({self.ppo.num_minibatches})"
            )

    def _validate_workers(self) -> None:
        if not isinstance(self.workers, int) or self.workers < 0:
            raise ValueError(f"workers must be an integer >= 0, got {self.workers!r}")
        if self.workers > self.env.num_envs:
            raise ValueError(f"--workers {self.workers} is more than --num-envs {self.env.num_envs}: "
                             "each worker needs an env")
        if self.workers and self.env.env_id == SCREEN_ID:
            raise ValueError("a live screen runs in this process: drop --workers / --ray")
        if self.ray_address is not None:
            if not self.workers:
                raise ValueError("--ray needs --workers N (N >= 1 Ray actors)")
            host_port = r"[^\s:/]+:\d{1,5}|\[[0-9a-fA-F:.]+\]:\d{1,5}"
            if self.ray_address != "local" and not re.fullmatch(host_port, self.ray_address):
                raise ValueError(f"--ray must be 'local' or HOST:PORT of a Ray head (e.g. 10.0.0.5:6379), "
                                 f"got '{self.ray_address}'")
        if self.ray_dashboard and self.ray_address != "local":
            raise ValueError("--ray-dashboard applies to the cluster wanderlust starts: use it with --ray local")

    @property
    def batch_size(self) -> int:
        """Transitions per PPO update (T * N)."""
        return self.ppo.num_steps * self.env.num_envs

    @property
    def num_updates(self) -> int:
        """PPO updates needed to reach total_steps (rounded up)."""
        return max(1, math.ceil(self.total_steps / self.batch_size))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        """Rebuild from ``to_dict()`` output; unknown keys raise ValueError naming them."""
        return _from_dict(cls, data, "config")


def _positive(name: str, value: int) -> None:
    if not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _from_dict(cls: type, data: dict[str, Any], path: str) -> Any:
    if not isinstance(data, dict):
        raise ValueError(f"{path} must be a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"unknown config key(s) {', '.join(f'{path}.{k}' for k in unknown)}")
    kwargs = {}
    for name, value in data.items():
        default = getattr(cls(), name)
        if dataclasses.is_dataclass(default):
            kwargs[name] = _from_dict(type(default), value, f"{path}.{name}")
        else:
            kwargs[name] = value
    return cls(**kwargs)


def set_by_path(config: TrainConfig, dotted: str, raw: str) -> None:
    """Apply a ``--set ppo.learning_rate=1e-4`` style override, parsing ``raw`` by the field's type."""
    target: Any = config
    parts = dotted.split(".")
    for part in parts[:-1]:
        if not dataclasses.is_dataclass(target) or not hasattr(target, part):
            raise ValueError(f"unknown config key '{dotted}'")
        target = getattr(target, part)
    leaf = parts[-1]
    if not dataclasses.is_dataclass(target) or leaf not in {f.name for f in dataclasses.fields(target)}:
        raise ValueError(f"unknown config key '{dotted}'")
    current = getattr(target, leaf)
    annotation = str(next(f.type for f in dataclasses.fields(target) if f.name == leaf))
    setattr(target, leaf, _parse_like(current, raw, dotted, text_field=annotation.startswith("str"),
                                      optional="None" in annotation))


def apply_overrides(config: TrainConfig, items: list[str]) -> None:
    """Apply ``--set KEY=VALUE`` items in order (see :func:`set_by_path`); ValueError names a bad one."""
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ValueError(f"--set expects KEY=VALUE, got '{item}'")
        set_by_path(config, key.strip(), raw)


def _parse_like(current: Any, raw: str, name: str, text_field: bool = False, optional: bool = True) -> Any:
    """``raw`` parsed as the type of ``current``. ``text_field``: the field holds text (even while it is
    None); ``optional``: 'none'/'null' mean None (otherwise they are text, e.g. ``novelty_name=none``)."""
    text = raw.strip()
    if text.lower() in ("none", "null") and optional:
        return None
    if text_field:
        return text
    try:
        if isinstance(current, bool):
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if isinstance(current, int):
            return int(float(text)) if float(text).is_integer() else int(text)
        if isinstance(current, float) or current is None:
            try:
                return int(text)
            except ValueError:
                return float(text)
    except ValueError:
        raise ValueError(f"bad value for {name}: '{raw}' is not a {type(current).__name__}") from None
    return text


PRESETS: dict[str, str] = {
    "default": "Defaults: the built-in maze, episodic novelty, Nature CNN on centred pixels, 8 envs x 128 steps, "
               "lr 1e-3, entropy bonus 0.01 (0.03 with --novelty icm, pixel or rnd), stick noise held 8 steps.",
    "quick": "A tiny run for smoke tests: 2 envs x 32 steps, 2 epochs, seed encoder.",
    **{preset.name: preset.summary for preset in BENCHMARK_PRESETS},
}


# Settings of the default preset that depend on the novelty module, measured on the maze at 300k steps
# (docs/benchmarks.md, "ICM: a smaller learning rate or a larger entropy bonus"): ICM's forward-error
# reward drives the sticks into a few fixed pushes unless the entropy bonus is larger (two seeds:
# 12.3%/14.4% of the maze covered at 0.01, 17.9%/22.0% at 0.03); pixel too (15.6%/15.9% -> 16.3%/20.7%)
# and rnd (16.7%/16.5% -> 17.3%/20.6%). Episodic stays at 0.01 (seed 1: 18.5% at 0.01, 17.4% at 0.03).
DEFAULT_NOVELTY_TUNING: dict[str, dict[str, str]] = {
    "icm": {"ppo.ent_coef": "0.03"},
    "pixel": {"ppo.ent_coef": "0.03"},
    "rnd": {"ppo.ent_coef": "0.03"},
}


def make_preset(name: str, novelty: str | None = None) -> TrainConfig:
    """A named starting config; command-line options are applied on top.

    ``novelty`` picks the novelty module and, on the ``default`` preset, the settings measured best
    with it (:data:`DEFAULT_NOVELTY_TUNING`); ``--set`` values given after still win.
    The benchmark presets (``rnd-atari``, ``icm-vizdoom``, ``minigrid``) are defined, with their
    sources, in :mod:`wanderlust.runtime.presets`.
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset '{name}'; choose one of {', '.join(PRESETS)}")
    config = TrainConfig()
    for preset in BENCHMARK_PRESETS:
        if preset.name == name:
            preset.apply(config)
    if name == "default":  # measured on the maze (docs/benchmarks.md); benchmark presets set their own
        config.ppo.learning_rate = 1e-3
        # The bonus on the squashed sticks' entropy keeps the Gaussian means from running into tanh's
        # saturation (without it, trained policies hold sticks at the end of their range 32-86% of steps).
        config.ppo.ent_coef = 0.01
        # At lr 1e-3 most first-layer ReLUs die on x/255 inputs; centred inputs keep them alive.
        config.center_pixels = True
        # A stick that keeps its random push for 8 steps moves somewhere; fresh noise every step jitters
        # in place (the untrained policy covers 19.1% of the maze against 10.5%).
        config.noise_hold = 8
    if name == "quick":
        config.env.num_envs = 2
        config.ppo.num_steps = 32
        config.ppo.num_minibatches = 2
        config.ppo.update_epochs = 2
        config.encoder = "seed"
        config.total_steps = 2_048
        config.checkpoint_every = 1_024
    if novelty is not None:
        set_by_path(config, "novelty_name", novelty)
        if name == "default":
            for key, value in DEFAULT_NOVELTY_TUNING.get(novelty, {}).items():
                set_by_path(config, key, value)
    return config
