"""Build single and vectorized envs from an EnvConfig, with the standard preprocessing.

Every env handed to the agent yields uint8 observations ``[C, H, W]`` with
``C = frame_stack * channels_per_frame`` (newest frame last), or float32 vectors ``[D]`` for envs
whose observations are 1-D Boxes (not resized or stacked), and has a Box action space in [-1, 1]
or a Discrete one. Preprocessing uses Gymnasium's wrappers (resize, grayscale, frame stack); the
only wrapper of our own turns the stack into channels-first. Family-specific set-up (Atari,
MiniGrid, VizDoom) is in :mod:`wanderlust.envs.families`.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from wanderlust.envs import register_envs
from wanderlust.envs.families import check_family_settings, make_base_env
from wanderlust.envs.vizdoom_starts import register_my_way_home_starts
from wanderlust.novelty.base import ObsSpec
from wanderlust.runtime.config import SCREEN_ID, EnvConfig, ScreenSettings

# Optional packages that register env ids when imported, by id prefix.
_PLUGINS: tuple[tuple[str, str], ...] = (
    ("ALE/", "ale_py"),
    ("Vizdoom", "vizdoom.gymnasium_wrapper"),
    ("wanderlust/MyWayHome", "vizdoom.gymnasium_wrapper"),
    ("MiniGrid", "minigrid"),
    ("BabyAI", "minigrid"),
)
_EXTRA_FOR_PLUGIN = {"ale_py": "atari", "vizdoom.gymnasium_wrapper": "vizdoom", "minigrid": "minigrid"}


class UnknownEnvError(ValueError):
    """The env id is not registered with Gymnasium."""


def _import_plugin(module: str) -> bool:
    """Import an optional env package so that its ids get registered; False if not installed."""
    try:
        imported = importlib.import_module(module)
    except ImportError:
        return False
    if module == "ale_py":
        gym.register_envs(imported)
    return True


def _register_own() -> None:
    register_envs()
    register_my_way_home_starts()


def load_all_plugins() -> list[str]:
    """Register every installed optional env package; returns the ones found."""
    _register_own()
    return [module for module in dict.fromkeys(m for _, m in _PLUGINS) if _import_plugin(module)]


def ensure_registered(env_id: str) -> None:
    """Import the package that provides ``env_id`` and check that Gymnasium knows it.

    Raises UnknownEnvError with close matches, or with the pip extra to install.
    """
    _register_own()
    for prefix, module in _PLUGINS:
        if env_id.startswith(prefix) and not _import_plugin(module):
            extra = _EXTRA_FOR_PLUGIN[module]
            raise UnknownEnvError(f"env '{env_id}' needs the '{extra}' extra: pip install 'wanderlust[{extra}]'")
    if env_id in gym.registry:
        return
    matches = difflib.get_close_matches(env_id, list(gym.registry), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(m) for m in matches)}?" if matches else "; run 'wanderlust envs' to list ids"
    raise UnknownEnvError(f"unknown env id '{env_id}'{hint}")


def is_maze(env_id: str) -> bool:
    return env_id.startswith("wanderlust/Maze")


class ChannelsFirstStack(gym.ObservationWrapper):
    """``[S, H, W, C]`` (frame stack of images) or ``[H, W, C]`` -> uint8 ``[S * C, H, W]``. Stateless."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        shape = env.observation_space.shape
        if len(shape) == 4:
            stack, height, width, channels = shape
        elif len(shape) == 3:
            stack, (height, width, channels) = 1, shape
        else:
            raise ValueError(f"expected image observations, got shape {shape}")
        self._layout = (stack, height, width, channels)
        self.observation_space = spaces.Box(0, 255, (stack * channels, height, width), np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        stack, height, width, channels = self._layout
        frames = np.asarray(observation, dtype=np.uint8).reshape(stack, height, width, channels)
        return np.ascontiguousarray(frames.transpose(0, 3, 1, 2).reshape(stack * channels, height, width))


def is_vector(space: spaces.Space) -> bool:
    """A 1-D numeric Box: observations the agent reads with an MLP."""
    return isinstance(space, spaces.Box) and len(space.shape) == 1 and np.issubdtype(space.dtype, np.number)


def _image_observation(env: gym.Env, env_id: str) -> gym.Env:
    """Pick the image out of Dict observations (vizdoom's ``screen``); 2-D frames get a channel
    axis; 1-D vectors pass through as float32."""
    space = env.observation_space
    if isinstance(space, spaces.Dict):
        for key in ("screen", "image", "pixels", "rgb"):
            if key in space.spaces:
                return gym.wrappers.TransformObservation(env, lambda obs, key=key: obs[key], space.spaces[key])
        raise ValueError(f"env '{env_id}' has Dict observations without an image key (keys: {', '.join(space.spaces)})")
    if is_vector(space):
        return env if space.dtype == np.float32 else gym.wrappers.DtypeObservation(env, np.float32)
    if not (isinstance(space, spaces.Box) and space.dtype == np.uint8 and len(space.shape) in (2, 3)):
        raise ValueError(
            f"env '{env_id}' has observations {space}; wanderlust's agents need uint8 image frames (H, W[, C]) "
            "or 1-D Box vectors"
        )
    if len(space.shape) == 2:
        env = gym.wrappers.ReshapeObservation(env, (*space.shape, 1))
    return env


def _unit_actions(env: gym.Env, env_id: str) -> gym.Env:
    space = env.action_space
    if isinstance(space, spaces.Discrete):
        return env
    if isinstance(space, spaces.Box) and len(space.shape) == 1:
        if np.all(space.low == -1) and np.all(space.high == 1):
            return env
        unit = np.ones(space.shape, np.float32)  # float32 bounds: no precision warning from Box
        return gym.wrappers.RescaleAction(env, -unit, unit)
    raise ValueError(f"env '{env_id}' has action space {space}; wanderlust supports Box (1-D) and Discrete")


def make_env(config: EnvConfig, render_mode: str | None = None) -> gym.Env:
    """One preprocessed env (not seeded: seed it through ``reset(seed=...)``)."""
    if config.env_id == SCREEN_ID:
        env = make_live_screen(config.screen, render_mode)
    else:
        ensure_registered(config.env_id)
        check_family_settings(config)
        env = _make_registered(config, render_mode)
    env = gym.wrappers.RecordEpisodeStatistics(env)  # raw returns in info["episode"]
    env = _image_observation(env, config.env_id)
    env = _unit_actions(env, config.env_id)
    if is_vector(env.observation_space):
        return env
    if config.frame_size is not None and env.observation_space.shape[:2] != (config.frame_size, config.frame_size):
        try:
            import cv2  # noqa: F401  (Gymnasium's ResizeObservation needs OpenCV)
        except ImportError:
            raise ValueError("resizing frames needs OpenCV: pip install opencv-python-headless") from None
        env = gym.wrappers.ResizeObservation(env, (config.frame_size, config.frame_size))
    if config.grayscale and env.observation_space.shape[-1] == 3:
        env = gym.wrappers.GrayscaleObservation(env, keep_dim=True)
    if config.frame_stack > 1:
        env = gym.wrappers.FrameStackObservation(env, config.frame_stack)
    return ChannelsFirstStack(env)


def maze_kwargs(config: EnvConfig) -> dict:
    """``MazeEnv`` keyword arguments for the ``maze_*`` and ``max_episode_steps`` fields of ``config``."""
    kwargs: dict = {"size": config.maze_size, "obs_size": config.maze_obs_size}
    if config.maze_layout_seed is not None:
        kwargs.update(fixed_layout=True, layout_seed=config.maze_layout_seed)
    if config.maze_fixed_start:
        kwargs["start_cell"] = (0, 0)
    if config.max_episode_steps is not None:
        kwargs["max_steps"] = config.max_episode_steps
    return kwargs


def _make_registered(config: EnvConfig, render_mode: str | None) -> gym.Env:
    """The raw env behind a Gymnasium id, with the family's own options applied."""
    if not is_maze(config.env_id):
        return make_base_env(config, render_mode)
    kwargs = maze_kwargs(config)
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    return gym.make(config.env_id, **kwargs)


def make_live_screen(settings: ScreenSettings, render_mode: str | None = None) -> gym.Env:
    """The live game described by ``settings`` as a ScreenEnv (frames RGB, 4 stick axes, reward 0)."""
    from wanderlust.envs.screen import ScreenConfig, make_screen_env

    return make_screen_env(
        window=settings.window, window_class=settings.window_class, region=settings.region,
        monitor=settings.monitor, input_kind=settings.input, mapping_path=settings.mapping,
        hotkey=settings.stop_key, render_mode=render_mode,
        config=ScreenConfig(obs_size=(settings.frame_size, settings.frame_size), hz=settings.hz,
                            episode_seconds=settings.episode_seconds),
    )


def make_vector_env(config: EnvConfig, render_mode: str | None = None) -> gym.vector.VectorEnv:
    """N preprocessed envs with same-step autoreset: when an episode ends, ``step`` returns the
    reset observation and ``info["final_obs"]`` / ``info["final_info"]`` hold the last ones."""
    fns: list[Callable[[], gym.Env]] = [lambda: make_env(config, render_mode) for _ in range(config.num_envs)]
    if config.vector_mode == "async":
        return gym.vector.AsyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP, context="spawn")
    return gym.vector.SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)


def obs_spec(observation_space: spaces.Box, config: EnvConfig) -> ObsSpec:
    """Describe the agent-facing observations for the novelty modules (``(D,)`` for vectors)."""
    if len(observation_space.shape) == 1:
        return ObsSpec(shape=tuple(observation_space.shape), channels_per_frame=1)
    channels, height, width = observation_space.shape
    return ObsSpec(shape=(channels, height, width), channels_per_frame=channels // config.frame_stack)
