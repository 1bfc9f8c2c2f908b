"""VizDoom MyWayHome with the start settings of the ICM paper (Pathak et al. 2017, section 4.1).

- **dense**: ``VizdoomMyWayHome-v1`` as vizdoom ships it. The map's ENTER script puts the player on
  one of 17 map spots (thing ids 10-26), uniformly at random, facing a random direction.
- **sparse** / **very sparse**: the paper spawned the agent always in one room far from the vest
  (about 270 and 350 steps of an optimal policy away). Its modified wads are not part of vizdoom,
  so here the player is moved, after every reset, from wherever the map script put it to one fixed
  map spot with ZDoom's console command ``warp X Y`` (a cheat: ``+sv_cheats 1`` is set before the
  game starts). The warp takes effect on the next tic, so the reset runs one no-op action
  (``frame_skip`` tics, reward dropped) and then checks the player's POSITION_X/Y.
  The facing direction stays the random one the map script drew.

Which spots: the paper's room numbers cannot be matched to this map's spots, so the spots were
chosen by their walking distance to the vest (shortest path over the floor, kept 16 units (the
player's radius) from walls, from the map's linedefs; ``python benchmarks/mywayhome.py --spots``
recomputes and prints the table). Very sparse is the farthest spot (thing 15); sparse is thing 12,
whose distance is the closest to 270/350 of the farthest one.

Registered ids: ``wanderlust/MyWayHomeSparse-v0`` and ``wanderlust/MyWayHomeVerySparse-v0``
(``frame_skip`` and ``screen_resolution`` can be given to ``gymnasium.make`` as for vizdoom's ids).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

SPARSE_ID = "wanderlust/MyWayHomeSparse-v0"
VERY_SPARSE_ID = "wanderlust/MyWayHomeVerySparse-v0"

START_SPOTS: dict[str, tuple[int, float, float]] = {
    "sparse": (12, 470.331, -321.672),
    "very_sparse": (15, 543.986, -672.089),
}
"""Start name -> (map spot thing id, x, y) in my_way_home.wad's map units."""

WARP_TOLERANCE = 1.0
"""Largest distance (map units) between the warp target and where the player ends up."""


class FixedStart(gym.Wrapper):
    """Teleport the player to ``(x, y)`` after every reset (vizdoom envs with Discrete actions).

    Holds no state beyond the target. Raises RuntimeError if the player is not there afterwards.
    """

    def __init__(self, env: gym.Env, x: float, y: float) -> None:
        super().__init__(env)
        if not isinstance(env.action_space, gym.spaces.Discrete):
            raise ValueError(f"FixedStart needs a vizdoom env with Discrete actions, got {env.action_space}")
        self.target = (float(x), float(y))
        game = env.unwrapped.game
        if game.is_running():
            raise ValueError("FixedStart must wrap a vizdoom env before its first reset (cheats are set at start)")
        game.add_game_args("+sv_cheats 1")

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.env.reset(seed=seed, options=options)
        game = self.env.unwrapped.game
        game.send_game_command(f"warp {self.target[0]} {self.target[1]}")
        obs, _, terminated, truncated, info = self.env.step(0)  # action 0 presses no button
        position = player_position(self.env)
        missed = np.hypot(position[0] - self.target[0], position[1] - self.target[1]) > WARP_TOLERANCE
        if terminated or truncated or missed:
            raise RuntimeError(f"warp to {self.target} failed: the player is at {position}")
        return obs, info


def player_position(env: gym.Env) -> tuple[float, float]:
    """The player's (POSITION_X, POSITION_Y) in map units, read from the running vizdoom game."""
    import vizdoom

    game = env.unwrapped.game
    return (game.get_game_variable(vizdoom.GameVariable.POSITION_X),
            game.get_game_variable(vizdoom.GameVariable.POSITION_Y))


def make_my_way_home(
    start: str, frame_skip: int = 1, render_mode: str | None = None, screen_resolution: str | None = None
) -> gym.Env:
    """MyWayHome (Discrete(6): no-op + one of the 5 buttons) starting at ``START_SPOTS[start]``."""
    if start not in START_SPOTS:
        raise ValueError(f"unknown MyWayHome start '{start}'; choose one of {', '.join(START_SPOTS)}")
    from vizdoom.gymnasium_wrapper.gymnasium_env_defns import VizdoomScenarioEnv

    settings = {} if screen_resolution is None else {"screen_resolution": screen_resolution}
    env = VizdoomScenarioEnv("my_way_home.cfg", frame_skip=frame_skip, max_buttons_pressed=1,
                             render_mode=render_mode, **settings)
    _, x, y = START_SPOTS[start]
    return FixedStart(env, x, y)


def register_my_way_home_starts() -> None:
    """Register the sparse and very sparse MyWayHome ids with Gymnasium (idempotent)."""
    for env_id, start in ((SPARSE_ID, "sparse"), (VERY_SPARSE_ID, "very_sparse")):
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point="wanderlust.envs.vizdoom_starts:make_my_way_home",
                         kwargs={"start": start})
