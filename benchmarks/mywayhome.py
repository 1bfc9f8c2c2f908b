"""VizDoom MyWayHome, sparse and very sparse starts: success rate against training steps for
wanderlust with no intrinsic reward, ICM, RND and episodic novelty, over 3 seeds.

The ICM paper (Pathak et al. 2017) reports that ICM finds the vest in 100% of episodes from the
sparse start and solves 66% of its runs from the very sparse start after about 9M steps, while
A3C without curiosity never does (0%). This script measures where wanderlust is at a CPU budget:
each run is the ``icm-vizdoom`` preset (PPO, 20 envs x 128 steps, 42x42 gray x4, action repeat 4)
with the novelty swapped; every ``--eval-every`` steps the current policy plays ``--episodes``
seeded episodes (actions sampled) and an episode succeeds when it reaches the vest (return > 0).
A run counts as solved when its last evaluation succeeds in at least half of the episodes.

    python benchmarks/mywayhome.py                 # full: 2 starts x 4 methods x 3 seeds x 300k steps
    python benchmarks/mywayhome.py --quick         # smoke: 1 seed, 2,560 steps, 2 episodes
    python benchmarks/mywayhome.py --starts sparse --methods icm,none --steps 1000000
    python benchmarks/mywayhome.py --spots         # walking distance from every spawn spot to the vest

The issue asks for a budget under 2 hours per method (6 runs) on 2 cores. Each run prints its
minutes: time one run (``--starts sparse --methods icm --seeds 1 --steps 20000``) on the machine
and scale ``--steps`` to fit. A uniform random policy is played from each start as a floor
(``--random-episodes``). The sparse / very sparse starts are documented in
``wanderlust.envs.vizdoom_starts`` (which map spot, and how the player is put there).
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import re
import struct
import time
from pathlib import Path

import _common  # noqa: F401  (puts <repo>/src on sys.path)
import numpy as np
from _common import markdown_table, set_torch_threads
from _episodes import mean_curve, play_episodes, success_rate, wanderlust_curve

from wanderlust.runtime.config import TrainConfig, make_preset

STARTS = {"sparse": "wanderlust/MyWayHomeSparse-v0", "very_sparse": "wanderlust/MyWayHomeVerySparse-v0"}
METHODS = ("none", "icm", "rnd", "episodic")
SOLVED = 0.5
EVAL_SEED = 70_000
PLAYER_RADIUS = 16.0
GRID = 4.0  # map units per cell of the distance grid


def random_success(env_id: str, episodes: int) -> float:
    """Success rate of uniformly random actions from the start of ``env_id``."""
    config = make_preset("icm-vizdoom")
    config.env.env_id = env_id
    rng = np.random.default_rng(EVAL_SEED)
    played = play_episodes(config, lambda obs: np.int64(rng.integers(6)), episodes, EVAL_SEED)
    return success_rate([r for r, _ in played])


def benchmark_config(env_id: str, method: str, steps: int, seed: int, num_envs: int) -> TrainConfig:
    config = make_preset("icm-vizdoom")
    config.env.env_id = env_id
    config.env.num_envs = num_envs
    config.novelty_name = method
    config.normalize_intrinsic = method in ("rnd", "episodic")  # ICM's reward is used as is (paper)
    config.total_steps = steps
    config.seed = seed
    config.checkpoint_every = steps
    config.validate()
    return config


def midway_point(curve: list[tuple[int, float]], steps: int) -> tuple[int, float] | None:
    """The first evaluation at or after ``steps // 2`` that is not the last one; None if there is none
    (then nothing was measured midway: the run was evaluated only at its end).

    >>> midway_point([(100, 0.1), (200, 0.2), (300, 0.3)], 300)
    (200, 0.2)
    >>> midway_point([(51_200, 0.0)], 50_000) is None
    True
    """
    return next(((step, value) for step, value in curve[:-1] if step >= steps // 2), None)


# ---- walking distances from the spawn spots to the vest (for --spots) ----

def read_textmap(wad_path: Path) -> str:
    """The TEXTMAP lump (UDMF text) of a one-map PWAD."""
    data = wad_path.read_bytes()
    _, count, offset = struct.unpack("<4sii", data[:12])
    for i in range(count):
        start, size, name = struct.unpack("<ii8s", data[offset + 16 * i: offset + 16 * i + 16])
        if name.rstrip(b"\0") == b"TEXTMAP":
            return data[start:start + size].decode()
    raise ValueError(f"{wad_path} has no TEXTMAP lump")


def udmf_blocks(textmap: str) -> list[tuple[str, dict[str, str]]]:
    """``[(kind, {key: value})]`` for every ``kind // n { key = value; ... }`` block.

    >>> udmf_blocks('vertex // 0\\n{\\nx = 1.0;\\ny = -2.0;\\n}')
    [('vertex', {'x': '1.0', 'y': '-2.0'})]
    """
    return [(kind, dict(re.findall(r"(\w+)\s*=\s*([^;]+);", body)))
            for kind, body in re.findall(r"(\w+)\s*//[^\n]*\n\{([^}]*)\}", textmap)]


def walking_distances(textmap: str) -> tuple[tuple[float, float], dict[int, tuple[tuple[float, float], float]]]:
    """Goal (green armour) position and, per map spot id, ``(position, shortest walking distance)``.

    Walls are the one-sided linedefs; a grid cell is walkable when its centre is at least the
    player's radius from every wall; distances are 8-connected Dijkstra on that grid.
    """
    blocks = udmf_blocks(textmap)
    vertices = [(float(b["x"]), float(b["y"])) for kind, b in blocks if kind == "vertex"]
    walls = [(vertices[int(b["v1"])], vertices[int(b["v2"])]) for kind, b in blocks
             if kind == "linedef" and "sideback" not in b]
    things = [b for kind, b in blocks if kind == "thing"]
    spots = {int(b["id"]): (float(b["x"]), float(b["y"])) for b in things if b["type"] == "9001"}
    goal = next((float(b["x"]), float(b["y"])) for b in things if b["type"] == "2018")
    xs, ys = [v[0] for v in vertices], [v[1] for v in vertices]
    x0, y0 = min(xs), min(ys)
    width, height = int((max(xs) - x0) / GRID) + 1, int((max(ys) - y0) / GRID) + 1
    gx, gy = np.meshgrid(x0 + GRID * np.arange(width), y0 + GRID * np.arange(height))
    clearance = np.full(gx.shape, np.inf)
    for (ax, ay), (bx, by) in walls:
        dx, dy = bx - ax, by - ay
        u = np.clip(((gx - ax) * dx + (gy - ay) * dy) / (dx * dx + dy * dy), 0.0, 1.0)
        clearance = np.minimum(clearance, np.hypot(gx - ax - u * dx, gy - ay - u * dy))
    free = clearance >= PLAYER_RADIUS

    def cell(point: tuple[float, float]) -> tuple[int, int]:
        return int(round((point[1] - y0) / GRID)), int(round((point[0] - x0) / GRID))

    distance = np.full(free.shape, np.inf)
    distance[cell(goal)] = 0.0
    queue = [(0.0, cell(goal))]
    steps = [(di, dj, math.hypot(di, dj)) for di in (-1, 0, 1) for dj in (-1, 0, 1) if di or dj]
    while queue:
        d, (i, j) = heapq.heappop(queue)
        if d > distance[i, j]:
            continue
        for di, dj, w in steps:
            a, b = i + di, j + dj
            if 0 <= a < height and 0 <= b < width and free[a, b] and d + w < distance[a, b]:
                distance[a, b] = d + w
                heapq.heappush(queue, (d + w, (a, b)))
    return goal, {spot: (xy, float(distance[cell(xy)] * GRID)) for spot, xy in spots.items()}


def print_spots() -> None:
    import vizdoom

    from wanderlust.envs.vizdoom_starts import START_SPOTS

    goal, spots = walking_distances(read_textmap(Path(vizdoom.scenarios_path) / "my_way_home.wad"))
    chosen = {spot: name for name, (spot, _, _) in START_SPOTS.items()}
    farthest = max(d for _, d in spots.values())
    rows = [[spot, f"({x:.0f}, {y:.0f})", round(d), f"{d / farthest:.2f}", chosen.get(spot, "")]
            for spot, ((x, y), d) in sorted(spots.items(), key=lambda item: item[1][1])]
    print(f"MyWayHome: walking distance (map units) from each spawn spot to the vest at {goal}; "
          f"the dense start picks one of these at random.\n")
    print(markdown_table(["spot", "position", "distance", "of farthest", "start"], rows))


# ---- the benchmark ----

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", default=",".join(STARTS), help="comma-separated: sparse, very_sparse")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated novelty modules")
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated training seeds")
    parser.add_argument("--steps", type=int, default=300_000, help="training steps per run")
    parser.add_argument("--eval-every", type=int, default=50_000, help="steps between evaluations")
    parser.add_argument("--episodes", type=int, default=10, help="evaluation episodes")
    parser.add_argument("--num-envs", type=int, default=20, help="parallel envs (the preset's 20)")
    parser.add_argument("--random-episodes", type=int, default=100, help="episodes of the random-policy floor")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: seed 1, 2,560 steps, 2 envs, 2 episodes, 5 random episodes")
    parser.add_argument("--spots", action="store_true", help="only print the spawn spots' distances to the vest")
    parser.add_argument("--json", type=Path, help="also write the curves here")
    args = parser.parse_args()
    if args.spots:
        print_spots()
        return
    if args.quick:
        args.seeds, args.steps, args.eval_every, args.episodes, args.num_envs = "1", 2_560, 1_280, 2, 2
        args.random_episodes = 5
    set_torch_threads(args.threads)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]

    rows, results = [], []
    for start in [s.strip() for s in args.starts.split(",") if s.strip()]:
        floor = random_success(STARTS[start], args.random_episodes)
        rows.append([start, f"random policy ({args.random_episodes} episodes)", 0, "", f"{floor:.0%}", "", 0.0])
        print(f"  {start} random policy: success {floor:.0%}", flush=True)
        for method in [m.strip() for m in args.methods.split(",") if m.strip()]:
            started = time.perf_counter()
            curves = [wanderlust_curve(benchmark_config(STARTS[start], method, args.steps, seed, args.num_envs),
                                       args.eval_every, args.episodes, EVAL_SEED) for seed in seeds]
            minutes = (time.perf_counter() - started) / 60
            mean = mean_curve(curves)
            solved = sum(curve[-1][1] >= SOLVED for curve in curves)
            midway = midway_point(mean, args.steps)
            rows.append([start, method, mean[-1][0], "not evaluated" if midway is None else
                         f"{midway[1]:.0%} at {midway[0]:,}", f"{mean[-1][1]:.0%}", f"{solved}/{len(seeds)}", minutes])
            results.append({"start": start, "method": method, "seeds": seeds, "curves": curves, "minutes": minutes})
            print(f"  {start} {method}: success {mean[-1][1]:.0%} at {mean[-1][0]:,} steps, "
                  f"{solved}/{len(seeds)} runs solved ({minutes:.1f} min)", flush=True)
    print(f"\nMyWayHome success rate ({args.episodes} evaluation episodes, mean over seeds {args.seeds}; "
          f"solved = last evaluation >= {SOLVED:.0%}):\n")
    print(markdown_table(["start", "novelty", "steps trained", "success midway", "final success", "runs solved",
                          "minutes"], rows))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
