"""Which of a trained policy's ReLU units still fire? A diagnostic for collapsed runs.

A ReLU whose input is negative for every frame passes no gradient and never recovers. When all units
of one layer die, the encoder's output is the same for every frame: the policy ignores what it sees
and both critics predict a constant (explained variance exactly 0 in metrics.jsonl). This script
loads each run's latest checkpoint, plays ``--frames`` random-action steps of the run's env and
prints, per ReLU of the encoder, the fraction of its units (channel x position for convolutions)
that are positive for at least one of those frames, then how much the encoder's features, the
intrinsic value and the policy's mean vary across the frames. With ``--untrained`` a freshly
initialized network of the same config (torch seeded with the run's seed) is measured too, for comparison.

    python benchmarks/dead_units.py runs/maze runs/maze2
    python benchmarks/dead_units.py runs/maze --untrained
"""

from __future__ import annotations

import argparse
from pathlib import Path

import _common  # noqa: F401  (puts <repo>/src on sys.path)
import numpy as np
import torch
from _common import markdown_table, set_torch_threads

from wanderlust.agent.actor_critic import ActorCritic, build_agent
from wanderlust.algo.evaluate import load_policy
from wanderlust.envs.factory import make_env
from wanderlust.runtime.config import EnvConfig


def random_frames(env_config: EnvConfig, frames: int, seed: int) -> torch.Tensor:
    """``frames`` observations ``[frames, *obs_shape]`` of one env under uniformly random actions."""
    env_config.num_envs = 1
    env = make_env(env_config)
    try:
        env.action_space.seed(seed)
        obs, _ = env.reset(seed=seed)
        seen = []
        for _ in range(frames):
            seen.append(obs)
            obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                obs, _ = env.reset()
        return torch.as_tensor(np.stack(seen))
    finally:
        env.close()


def alive_fractions(agent: ActorCritic, obs: torch.Tensor) -> tuple[dict[str, float], dict[str, float]]:
    """Per encoder ReLU (by module name): the fraction of its units positive for at least one frame of
    ``obs``; and the mean standard deviation across frames of the features, intrinsic value and
    policy head output."""
    outputs: dict[str, torch.Tensor] = {}
    hooks = [module.register_forward_hook(lambda _m, _i, out, name=name: outputs.__setitem__(name, out.detach()))
             for name, module in agent.encoder.named_modules() if isinstance(module, torch.nn.ReLU)]
    try:
        with torch.no_grad():
            features = agent.encoder(obs)
            value_int = agent.value_int(features).squeeze(-1)
            head = agent.actor(features)
    finally:
        for hook in hooks:
            hook.remove()
    alive = {name: float((out.reshape(out.shape[0], -1) > 0).any(dim=0).float().mean()) for name, out in outputs.items()}
    spread = {"features": float(features.std(0).mean()), "value_int": float(value_int.std()),
              "policy head": float(head.std(0).mean())}
    return alive, spread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR", help="training run folders")
    parser.add_argument("--frames", type=int, default=200, help="random-action frames to probe with")
    parser.add_argument("--seed", type=int, default=3, help="seed of the probing episode")
    parser.add_argument("--untrained", action="store_true", help="also measure a fresh network of each run's config")
    args = parser.parse_args()
    if args.frames < 2:
        parser.error("--frames must be >= 2")
    set_torch_threads(1)
    rows, names = [], None
    for run in args.runs:
        config, agent = load_policy(run)
        obs = random_frames(config.env, args.frames, args.seed)
        agents = [(str(run), agent)]
        if args.untrained:
            torch.manual_seed(config.seed)
            agents.append((f"{run} (fresh network)", build_agent(config, obs.shape[1:], agent.action_space)))
        for label, policy in agents:
            alive, spread = alive_fractions(policy, obs)
            names = names or list(alive)
            rows.append([label] + [f"{alive[n]:.1%}" for n in names] + [f"{v:.3g}" for v in spread.values()])
    print(f"\nunits positive for at least one of {args.frames} random-action frames, per encoder ReLU; "
          f"std across those frames\n")
    print(markdown_table(["run"] + [f"alive {n}" for n in names] + ["std features", "std value_int", "std policy head"],
                         rows))


if __name__ == "__main__":
    main()
