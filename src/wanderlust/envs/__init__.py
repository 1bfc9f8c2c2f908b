"""Environments: the built-in maze and (later) the live-screen env."""

import gymnasium as gym

MAZE_ID = "wanderlust/Maze-v0"
MAZE_DISCRETE_ID = "wanderlust/MazeDiscrete-v0"


def register_envs() -> None:
    """Register wanderlust's envs with Gymnasium (idempotent)."""
    if MAZE_ID not in gym.registry:
        gym.register(
            id=MAZE_ID,
            entry_point="wanderlust.envs.maze.env:MazeEnv",
            kwargs={"discrete": False},
        )
    if MAZE_DISCRETE_ID not in gym.registry:
        gym.register(
            id=MAZE_DISCRETE_ID,
            entry_point="wanderlust.envs.maze.env:MazeEnv",
            kwargs={"discrete": True},
        )
