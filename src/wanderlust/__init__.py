"""wanderlust: curiosity-driven exploration of video games from pixels.

Importing the package registers the built-in Gymnasium environments
(``wanderlust/Maze-v0``, ``wanderlust/MazeDiscrete-v0``).
"""

from wanderlust.envs import register_envs

__version__ = "0.1.0"

register_envs()
