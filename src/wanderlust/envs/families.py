"""Per-family env set-up for the standard exploration benchmarks: Atari (ALE), MiniGrid, VizDoom.

:func:`make_base_env` builds the env that :func:`wanderlust.envs.factory.make_env` then records
and preprocesses (image extraction, resize, grayscale, frame stack, channels first):

- **Atari** (``ALE/...``, with ``atari_preprocessing``): the ALE env with ``frameskip=1`` (sticky
  actions stay at v5's ``repeat_action_probability=0.25``) inside Gymnasium's ``AtariPreprocessing``:
  up to 30 no-op actions on reset, each action repeated ``action_repeat`` (default 4) frames with a
  max over the last two, frames resized to ``frame_size`` (default 84) and grayscale if
  ``grayscale``; no end of episode on a lost life. ``max_episode_steps`` counts agent steps (so
  4,500 = 18,000 frames, RND's limit). Montezuma's Revenge also reports the rooms visited
  (:class:`MontezumaRooms`).
- **MiniGrid** (``MiniGrid-...``, ``BabyAI-...``): RGB pixels of the agent's 7x7-tile egocentric view
  (``RGBImgPartialObsWrapper`` + ``ImgObsWrapper``), ``minigrid_tile_size`` pixels per tile (8 gives
  56x56x3). Discrete(7) actions.
- **VizDoom** (``Vizdoom...``, ``wanderlust/MyWayHome...``): ``frame_skip = action_repeat`` and an
  optional render size; the ``screen`` image is picked out of the Dict observation later.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import gymnasium as gym
import numpy as np

from wanderlust.runtime.config import EnvConfig

ATARI_PREFIX = "ALE/"
MINIGRID_PREFIXES = ("MiniGrid-", "BabyAI-")
VIZDOOM_PREFIXES = ("Vizdoom", "wanderlust/MyWayHome")
ATARI_DEFAULT_REPEAT = 4
"""Frames per agent step in AtariPreprocessing when ``action_repeat`` is None (the standard)."""
ATARI_DEFAULT_SIZE = 84
"""Frame size AtariPreprocessing produces when ``frame_size`` is None (the standard)."""
VIZDOOM_INI = Path(tempfile.gettempdir()) / "wanderlust-vizdoom" / "_vizdoom.ini"
"""ZDoom's settings file; vizdoom would otherwise write ``_vizdoom.ini`` into the working directory."""
MONTEZUMA_ROOM_ADDRESS = 3
"""RAM byte holding the current room number (0-23) in Montezuma's Revenge."""
MONTEZUMA_ROOMS = 24
"""Rooms in the first level of Montezuma's Revenge."""


def family(env_id: str) -> str:
    """``atari``, ``minigrid``, ``vizdoom`` or ``other``, from the id prefix."""
    if env_id.startswith(ATARI_PREFIX):
        return "atari"
    if env_id.startswith(MINIGRID_PREFIXES):
        return "minigrid"
    if env_id.startswith(VIZDOOM_PREFIXES):
        return "vizdoom"
    return "other"


class MontezumaRooms(gym.Wrapper):
    """Adds ``info["rooms_visited"]`` (distinct rooms this episode, from RAM byte 3) and
    ``info["coverage"]`` (that number / 24) to every reset and step. Holds the episode's room set."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.rooms: set[int] = set()

    def _add_room(self, info: dict) -> dict:
        self.rooms.add(int(self.env.unwrapped.ale.getRAM()[MONTEZUMA_ROOM_ADDRESS]))
        return {**info, "rooms_visited": len(self.rooms), "coverage": len(self.rooms) / MONTEZUMA_ROOMS}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.rooms = set()
        return obs, self._add_room(info)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, self._add_room(info)


def _atari(config: EnvConfig, render_mode: str | None) -> gym.Env:
    kwargs: dict = {} if render_mode is None else {"render_mode": render_mode}
    if not config.atari_preprocessing:
        if config.action_repeat is not None:
            kwargs["frameskip"] = config.action_repeat
        if config.max_episode_steps is not None:
            kwargs["max_episode_steps"] = config.max_episode_steps
        env = gym.make(config.env_id, **kwargs)
        return MontezumaRooms(env) if "MontezumaRevenge" in config.env_id else env
    env = gym.make(config.env_id, frameskip=1, **kwargs)
    env = gym.wrappers.AtariPreprocessing(
        env, noop_max=30, frame_skip=config.action_repeat or ATARI_DEFAULT_REPEAT,
        screen_size=config.frame_size or ATARI_DEFAULT_SIZE, grayscale_obs=config.grayscale,
    )
    if config.max_episode_steps is not None:
        env = gym.wrappers.TimeLimit(env, config.max_episode_steps)
    return MontezumaRooms(env) if "MontezumaRevenge" in config.env_id else env


def _minigrid(config: EnvConfig, render_mode: str | None) -> gym.Env:
    from minigrid.wrappers import ImgObsWrapper, RGBImgPartialObsWrapper

    kwargs: dict = {} if render_mode is None else {"render_mode": render_mode}
    if config.max_episode_steps is not None:
        kwargs["max_steps"] = config.max_episode_steps
    env = gym.make(config.env_id, **kwargs)
    return ImgObsWrapper(RGBImgPartialObsWrapper(env, tile_size=config.minigrid_tile_size))


def _vizdoom(config: EnvConfig, render_mode: str | None) -> gym.Env:
    kwargs: dict = {} if render_mode is None else {"render_mode": render_mode}
    if config.action_repeat is not None:
        kwargs["frame_skip"] = config.action_repeat
    if config.vizdoom_resolution is not None:
        kwargs["screen_resolution"] = f"RES_{config.vizdoom_resolution.upper()}"
    if config.max_episode_steps is not None:
        kwargs["max_episode_steps"] = config.max_episode_steps
    env = gym.make(config.env_id, **kwargs)
    VIZDOOM_INI.parent.mkdir(parents=True, exist_ok=True)
    env.unwrapped.game.set_doom_config_path(str(VIZDOOM_INI))  # read when the game starts (first reset)
    if isinstance(env.action_space, gym.spaces.Discrete):
        # vizdoom looks 0-d arrays up as button vectors, not indices: hand it a numpy integer.
        env = gym.wrappers.TransformAction(env, np.int64, env.action_space)
    return env


def check_family_settings(config: EnvConfig) -> None:
    """Raise ValueError for family-specific settings given to an env of another family."""
    kind = family(config.env_id)
    if config.action_repeat is not None and kind not in ("atari", "vizdoom") and config.action_repeat != 1:
        raise ValueError(f"action_repeat applies to ALE/ and VizDoom ids only, not '{config.env_id}'; leave it unset")
    if config.vizdoom_resolution is not None and kind != "vizdoom":
        raise ValueError(f"vizdoom_resolution applies to VizDoom ids only, not '{config.env_id}'; leave it unset")


def make_base_env(config: EnvConfig, render_mode: str | None) -> gym.Env:
    """The env before recording and generic preprocessing (see the module docstring); not for the maze."""
    check_family_settings(config)
    kind = family(config.env_id)
    if kind == "atari":
        return _atari(config, render_mode)
    if kind == "minigrid":
        return _minigrid(config, render_mode)
    if kind == "vizdoom":
        return _vizdoom(config, render_mode)
    kwargs: dict = {} if render_mode is None else {"render_mode": render_mode}
    if config.max_episode_steps is not None:
        kwargs["max_episode_steps"] = config.max_episode_steps
    return gym.make(config.env_id, **kwargs)
