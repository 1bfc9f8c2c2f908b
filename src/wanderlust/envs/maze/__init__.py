"""The built-in first-person maze (``wanderlust/Maze-v0``, ``wanderlust/MazeDiscrete-v0``).

Modules: ``layout`` (maze graph and walls), ``physics`` (kinematics, collisions),
``textures`` (colour tables), ``raycast`` (first-person renderer), ``mapview`` (top-down
map), ``env`` (the Gymnasium env) and ``explorers`` (oracle, random and reference explorers).
"""

from wanderlust.envs.maze.env import DISCRETE_ACTIONS, MazeEnv
from wanderlust.envs.maze.explorers import (
    EXPLORER_NAMES,
    CorridorExplorer,
    OracleExplorer,
    RandomExplorer,
    make_explorer,
    run_explorer,
)
from wanderlust.envs.maze.layout import MazeLayout, generate_layout

__all__ = [
    "DISCRETE_ACTIONS",
    "EXPLORER_NAMES",
    "CorridorExplorer",
    "MazeEnv",
    "MazeLayout",
    "OracleExplorer",
    "RandomExplorer",
    "generate_layout",
    "make_explorer",
    "run_explorer",
]
