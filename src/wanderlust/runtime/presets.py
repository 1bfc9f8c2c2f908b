"""Named presets for the standard exploration benchmarks, with the published hyperparameters.

Each preset is a :class:`Preset`: a name, one line for ``--help``, where its numbers come from, and
a function that sets them on a default :class:`~wanderlust.runtime.config.TrainConfig`. Command-line
options are applied on top, so ``wanderlust train ALE/Venture-v5 --preset rnd-atari --num-envs 8``
keeps everything else of the preset. Values a paper does not give keep wanderlust's defaults
(CleanRL's ``ppo_atari`` / ``ppo_rnd_envpool``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wanderlust.runtime.config import TrainConfig


@dataclass(frozen=True)
class Preset:
    """A named starting config and the source of its values."""

    name: str
    """What users type after ``--preset``."""
    summary: str
    """One line for ``--help`` and ``wanderlust train --preset`` errors."""
    source: str
    """The paper (and table) the values come from, or why they were chosen."""
    apply: Callable[[TrainConfig], None]
    """Sets the preset's values on a default TrainConfig, in place."""


RND_ROLLOUTS_PER_ENV = 30_000
"""RND's total rollouts per environment; 30K x 128 steps x 128 envs = 491.52M agent steps (1.97B frames)."""


def _rnd_atari(config: TrainConfig) -> None:
    env, ppo, rnd = config.env, config.ppo, config.novelty.rnd
    env.env_id = "ALE/MontezumaRevenge-v5"
    env.num_envs = 128
    env.atari_preprocessing = True  # frameskip=1 inside, 4 in the wrapper; sticky actions 0.25 (v5)
    env.action_repeat = 4
    env.frame_size = 84
    env.grayscale = True
    env.frame_stack = 4
    env.max_episode_steps = 4_500  # 18K frames
    ppo.num_steps = 128
    ppo.gamma = 0.999
    ppo.gamma_int = 0.99
    ppo.gae_lambda = 0.95
    ppo.learning_rate = 1e-4
    ppo.anneal_lr = False
    ppo.update_epochs = 4
    ppo.num_minibatches = 4
    ppo.ent_coef = 0.001
    ppo.clip_coef = 0.1
    ppo.ext_coef = 2.0
    ppo.int_coef = 1.0
    config.novelty_name = "rnd"
    config.normalize_intrinsic = True
    rnd.learning_rate = 1e-4
    rnd.update_epochs = 4
    rnd.minibatch_size = 128 * 128 // 4  # the PPO minibatch: 4 per rollout
    rnd.update_proportion = 0.25
    rnd.feature_dim = 512
    config.encoder = "nature"
    config.total_steps = RND_ROLLOUTS_PER_ENV * 128 * 128
    config.checkpoint_every = 5_000_000


ICM_LEARNING_RATE = 1e-3
"""Adam learning rate of the ICM paper's A3C (shared by policy and ICM)."""
ICM_POLICY_WEIGHT = 0.1
"""lambda: the ICM paper's weight of the policy loss against the ICM loss."""


def _icm_vizdoom(config: TrainConfig) -> None:
    env, ppo, icm = config.env, config.ppo, config.novelty.icm
    env.env_id = "wanderlust/MyWayHomeSparse-v0"
    env.num_envs = 20  # the paper's 20 A3C workers
    env.action_repeat = 4
    env.vizdoom_resolution = "160x120"  # rendered smaller, then resized: only the 42x42 input matters
    env.frame_size = 42
    env.grayscale = True
    env.frame_stack = 4
    ppo.num_steps = 128
    # The policy's gradient is weighted by lambda against the ICM's in the paper's single loss; with
    # separate optimizers that is the policy's step size: lambda * lr.
    ppo.learning_rate = ICM_POLICY_WEIGHT * ICM_LEARNING_RATE
    ppo.gamma = 0.99
    ppo.gamma_int = 0.99
    ppo.ent_coef = 0.01
    ppo.ext_coef = 1.0  # the paper adds the two rewards
    ppo.int_coef = 1.0
    config.novelty_name = "icm"
    config.normalize_intrinsic = False  # the paper uses eta * forward error as is
    icm.beta = 0.2
    icm.eta = 0.01
    icm.learning_rate = ICM_LEARNING_RATE
    config.encoder = "nature"
    config.total_steps = 10_000_000
    config.checkpoint_every = 500_000


def _minigrid(config: TrainConfig) -> None:
    env, ppo, rnd = config.env, config.ppo, config.novelty.rnd
    env.env_id = "MiniGrid-DoorKey-8x8-v0"
    env.num_envs = 16
    env.minigrid_tile_size = 8  # 56x56 RGB egocentric view
    env.grayscale = False  # colours tell keys, doors and goal apart
    env.frame_stack = 1
    ppo.num_steps = 128
    ppo.learning_rate = 2.5e-4
    ppo.gamma = 0.99
    ppo.gamma_int = 0.99
    ppo.update_epochs = 4
    ppo.num_minibatches = 4
    ppo.ent_coef = 0.01
    ppo.clip_coef = 0.2
    ppo.ext_coef = 2.0
    ppo.int_coef = 1.0
    config.novelty_name = "rnd"
    rnd.all_channels = True  # RGB input: a grayscale key and door can look alike
    rnd.update_proportion = 1.0  # 16 envs: RND's 0.25 was for 128
    rnd.minibatch_size = 16 * 128 // 4
    config.encoder = "nature"
    config.total_steps = 3_000_000
    config.checkpoint_every = 250_000


BENCHMARK_PRESETS: tuple[Preset, ...] = (
    Preset(
        "rnd-atari",
        "RND on Atari (Burda et al. 2018): 128 envs x 128 steps, 84x84 gray x4, sticky actions, Montezuma.",
        "Burda et al. 2018, 'Exploration by Random Network Distillation', appendix table of default hyperparameters.",
        _rnd_atari,
    ),
    Preset(
        "icm-vizdoom",
        "ICM on VizDoom MyWayHome sparse (Pathak et al. 2017) mapped to PPO: 42x42 gray x4, repeat 4.",
        "Pathak et al. 2017, 'Curiosity-driven Exploration by Self-supervised Prediction', section 4 and "
        "appendix (A3C, 20 workers, lr 1e-3, beta 0.2, lambda 0.1, eta 0.01).",
        _icm_vizdoom,
    ),
    Preset(
        "minigrid",
        "PPO + RND on MiniGrid DoorKey-8x8 from 56x56 RGB egocentric frames, 16 envs x 128 steps.",
        "No published pixel-MiniGrid RND settings: CleanRL PPO defaults with RND's coefficients.",
        _minigrid,
    ),
)
