"""MiniGrid DoorKey-8x8 and MultiRoom-N6 from pixels: env steps until the policy succeeds in 90% of
episodes, for wanderlust with no intrinsic reward, RND, ICM and episodic novelty, and for
Stable-Baselines3 PPO (no intrinsic reward) with the same settings, in the same run.

(Named ``minigrid_success.py``, not ``minigrid.py``: a script called ``minigrid.py`` would shadow the
``minigrid`` package for every import made while it runs.)

Settings: the ``minigrid`` preset (16 envs x 128 steps, 56x56 RGB egocentric view, PPO lr 2.5e-4,
4 epochs x 4 minibatches, clip 0.2, entropy 0.01); SB3 gets the same numbers (n_steps 128,
batch 512, CnnPolicy = the Nature CNN). Every ``--eval-every`` steps the current policy plays
``--episodes`` seeded episodes (actions sampled); an episode succeeds when its return is above 0.

    python benchmarks/minigrid_success.py             # full: 1M steps per method and env (hours on 2 cores)
    python benchmarks/minigrid_success.py --quick     # smoke: 4,096 steps, 2 evaluations of 3 episodes
    python benchmarks/minigrid_success.py --envs MiniGrid-DoorKey-8x8-v0 --methods none,rnd,sb3 --steps 500000
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import _common  # noqa: F401  (puts <repo>/src on sys.path)
from _common import markdown_table, set_torch_threads
from _episodes import play_episodes, steps_to, success_rate, wanderlust_curve

from wanderlust.envs.factory import make_env
from wanderlust.runtime.config import TrainConfig, make_preset

ENVS = ("MiniGrid-DoorKey-8x8-v0", "MiniGrid-MultiRoom-N6-v0")
METHODS = ("none", "rnd", "icm", "episodic", "sb3")
TARGET = 0.9
EVAL_SEED = 50_000


def benchmark_config(env_id: str, method: str, steps: int, seed: int, num_envs: int) -> TrainConfig:
    config = make_preset("minigrid")
    config.env.env_id = env_id
    config.env.num_envs = num_envs
    config.novelty_name = "none" if method == "sb3" else method
    config.total_steps = steps
    config.seed = seed
    config.checkpoint_every = steps
    config.validate()
    return config


def sb3_curve(config: TrainConfig, eval_every: int, episodes: int) -> list[tuple[int, float]]:
    """Stable-Baselines3 PPO with the config's PPO numbers, evaluated like wanderlust's agents."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    ppo = config.ppo
    venv = DummyVecEnv([lambda: make_env(config.env) for _ in range(config.env.num_envs)])
    model = PPO(
        "CnnPolicy", venv, n_steps=ppo.num_steps, batch_size=config.batch_size // ppo.num_minibatches,
        n_epochs=ppo.update_epochs, gamma=ppo.gamma, gae_lambda=ppo.gae_lambda, clip_range=ppo.clip_coef,
        ent_coef=ppo.ent_coef, vf_coef=ppo.vf_coef, max_grad_norm=ppo.max_grad_norm,
        learning_rate=(lambda progress: progress * ppo.learning_rate) if ppo.anneal_lr else ppo.learning_rate,
        seed=config.seed, device="cpu", verbose=0,
    )
    curve: list[tuple[int, float]] = []

    def act(obs):
        return model.predict(obs, deterministic=False)[0]

    def evaluate_now() -> float:
        return success_rate([r for r, _ in play_episodes(config, act, episodes, EVAL_SEED)])

    class Evaluate(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next_eval = eval_every

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next_eval:
                curve.append((self.num_timesteps, evaluate_now()))
                self.next_eval = self.num_timesteps + eval_every
            return True

    torch.manual_seed(config.seed)
    model.learn(total_timesteps=config.total_steps, callback=Evaluate())
    if not curve or curve[-1][0] < model.num_timesteps:
        curve.append((model.num_timesteps, evaluate_now()))
    venv.close()
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", default=",".join(ENVS), help="comma-separated MiniGrid ids")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated: none, rnd, icm, episodic, sb3")
    parser.add_argument("--steps", type=int, default=1_000_000, help="training steps per method and env")
    parser.add_argument("--eval-every", type=int, default=50_000, help="steps between evaluations")
    parser.add_argument("--episodes", type=int, default=20, help="evaluation episodes")
    parser.add_argument("--num-envs", type=int, default=16, help="parallel envs (the preset's 16)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--quick", action="store_true", help="smoke run: 4,096 steps, 2 envs, 3 episodes")
    parser.add_argument("--json", type=Path, help="also write the curves here")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.eval_every, args.episodes, args.num_envs = 4_096, 2_048, 3, 2
    set_torch_threads(args.threads)

    rows, results = [], []
    for env_id in [e.strip() for e in args.envs.split(",") if e.strip()]:
        for method in [m.strip() for m in args.methods.split(",") if m.strip()]:
            config = benchmark_config(env_id, method, args.steps, args.seed, args.num_envs)
            started = time.perf_counter()
            if method == "sb3":
                curve = sb3_curve(config, args.eval_every, args.episodes)
            else:
                curve = wanderlust_curve(config, args.eval_every, args.episodes, EVAL_SEED)
            minutes = (time.perf_counter() - started) / 60
            reached = steps_to(curve, TARGET)
            label = "SB3 PPO" if method == "sb3" else f"wanderlust {method}"
            rows.append([env_id, label, reached if reached is not None else f"not reached at {curve[-1][0]:,}",
                         f"{curve[-1][1]:.0%}", minutes])
            results.append({"env": env_id, "method": method, "curve": curve, "minutes": minutes})
            print(f"  {env_id} {label}: success {curve[-1][1]:.0%} at {curve[-1][0]:,} steps ({minutes:.1f} min)",
                  flush=True)
    print(f"\nSteps to {TARGET:.0%} success ({args.episodes} evaluation episodes every {args.eval_every:,} steps, "
          f"seed {args.seed}, {args.num_envs} envs):\n")
    print(markdown_table(["env", "agent", f"steps to {TARGET:.0%}", "final success", "minutes"], rows))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
