"""The benchmark scripts' building blocks run end to end on a tiny budget (no timing asserted)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch

from tests.conftest import tiny_config

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import exploration  # noqa: E402


def test_exploration_trains_evaluates_and_compares_with_baselines():
    config = tiny_config(novelty_name="episodic")
    result = exploration.train_and_evaluate("episodic", 32, episodes=2, seed=1, episode_steps=30, config=config)
    assert result["train_steps"] == 32 and len(result["coverages"]) == 2
    assert all(0 < c <= 1 for c in result["coverages"])
    oracle = exploration.baseline("oracle", 2, 200)
    random = exploration.baseline("random", 2, 200)
    assert min(oracle["coverages"]) > max(random["coverages"])


def test_exploration_summarize_pools_runs_by_hand():
    def run(random, episodic):
        return [{"method": "random", "coverages": random}, {"method": "episodic", "coverages": episodic}]

    # run 1: random 0.1, episodic 0.3 (3x); run 2: random 0.2, episodic 0.3 (1.5x)
    rows = exploration.summarize([run([0.1, 0.1], [0.2, 0.4]), run([0.2, 0.2], [0.3, 0.3])])
    assert rows == [["random", "2", "15.0%", "10.0%", "20.0%", "1.00x", "0/2"],
                    ["episodic", "2", "30.0%", "30.0%", "30.0%", "2.25x", "1/2"]]
    with pytest.raises(ValueError, match="no random row"):
        exploration.summarize([[{"method": "episodic", "coverages": [0.5]}]])


def test_exploration_keeps_the_run_folder_when_asked(tmp_path):
    config = tiny_config(novelty_name="episodic")
    exploration.train_and_evaluate("episodic", 32, episodes=1, seed=3, episode_steps=10, config=config,
                                   keep_in=tmp_path)
    kept = tmp_path / "episodic-seed3"
    assert (kept / "config.json").is_file() and (kept / "metrics.jsonl").stat().st_size > 0
    assert any(kept.rglob("*.safetensors"))  # the final checkpoint is there to load again
    again = exploration.evaluate_run(kept, episodes=2, episode_steps=10)  # what --evaluate prints
    assert (again["method"], again["seed"], again["train_steps"]) == ("episodic", 3, 32)
    assert len(again["coverages"]) == 2 and all(0 < c <= 1 for c in again["coverages"])


def test_novelty_alignment_sums_rewards_per_behaviour():
    import novelty_alignment
    from wanderlust.runtime.config import TrainConfig

    config = TrainConfig()
    config.env.num_envs = 1
    config.env.max_episode_steps = 40
    config.novelty.episodic.reward_kind = "count"  # pays something for every frame, untrained or not
    spin, spin_coverage = novelty_alignment.episode_rewards(config, ["pixel", "episodic"], "spin", 100, 40)
    walk, walk_coverage = novelty_alignment.episode_rewards(config, ["pixel", "episodic"], "walk", 100, 40)
    assert spin_coverage == 1 / 81  # turning on the spot never leaves the start cell
    assert walk_coverage > spin_coverage
    assert all(value > 0 for value in (*spin.values(), *walk.values()))
    again, _ = novelty_alignment.episode_rewards(config, ["pixel", "episodic"], "spin", 100, 40)
    assert again == spin  # same seed, same untrained networks: deterministic
    _, corridor_coverage = novelty_alignment.episode_rewards(config, ["pixel"], "corridor", 100, 40)
    assert corridor_coverage >= 4 / 81  # 5 steps a cell: the graph walk enters a new cell every few steps


def test_novelty_alignment_scores_with_the_trained_module_of_a_run(tmp_path):
    import novelty_alignment

    config = tiny_config(novelty_name="episodic", novelty__episodic__landmark_radius=0.5)
    exploration.train_and_evaluate("episodic", 64, episodes=1, seed=1, episode_steps=10, config=config, keep_in=tmp_path)
    run_config, trained = novelty_alignment.trained_run(tmp_path / "episodic-seed1")
    assert run_config.novelty_name == "episodic" and run_config.env.maze_size == 5
    run_config.env.num_envs = 1
    run_config.env.max_episode_steps = 30
    # The run kept an episode memory per env (2); the 1-env scorer loads everything else.
    with_trained, coverage = novelty_alignment.episode_rewards(run_config, ["episodic"], "walk", 100, 30, trained)
    untrained, same_coverage = novelty_alignment.episode_rewards(run_config, ["episodic"], "walk", 100, 30)
    assert coverage == same_coverage  # the same behaviour was played
    assert with_trained["episodic"] != untrained["episodic"]  # scored by the trained embedding, not a fresh one
    again, _ = novelty_alignment.episode_rewards(run_config, ["episodic"], "walk", 100, 30, trained)
    assert again == with_trained


def test_mywayhome_midway_success_is_a_real_midway_evaluation_or_none():
    import mywayhome

    curve = [(51_200, 0.1), (102_400, 0.2), (153_600, 0.3), (307_200, 0.4)]
    assert mywayhome.midway_point(curve, 300_000) == (153_600, 0.3)
    # Evaluated only at the end: nothing was measured midway (the final value must not stand in for it).
    assert mywayhome.midway_point([(51_200, 0.0)], 50_000) is None
    assert mywayhome.midway_point([(25_600, 0.5), (51_200, 1.0)], 50_000) == (25_600, 0.5)


def test_montezuma_reports_the_steps_actually_trained():
    import montezuma

    # 40 steps of 2 envs x 16 need 2 updates: 64 agent steps are trained, not 40.
    result = montezuma.run(montezuma.smoke_config("none", 40, 2, 16, seed=1), episodes=1)
    assert result["steps"] == 64
    assert len(result["eval_rooms"]) == len(result["eval_scores"]) == 1 and result["eval_rooms"][0] >= 1


def test_coverage_reward_pays_one_per_new_cell_and_trains():
    import coverage_reward

    env = coverage_reward._make(discrete=True, max_steps=200)
    _, info = env.reset(seed=3)
    rewards, cells = [], [info["cells_visited"]]
    for _ in range(200):
        _, reward, _, truncated, info = env.step(1)  # forward until a wall, then nothing new
        rewards.append(reward)
        cells.append(info["cells_visited"])
    assert sum(rewards) == cells[-1] - cells[0] > 0
    assert set(rewards) <= {0.0, 1.0}

    config = tiny_config()
    config.total_steps = 32
    steps, coverages = coverage_reward.train_and_evaluate(config, "wanderlust/MazeDiscrete-v0", 2, 30)
    assert steps == 32 and len(coverages) == 2 and all(0 < c <= 1 for c in coverages)


def test_coverage_reward_keeps_the_run_folder_when_asked(tmp_path):
    import coverage_reward

    config = tiny_config()
    config.total_steps = 32
    kept = tmp_path / "run"
    coverage_reward.train_and_evaluate(config, "wanderlust/MazeDiscrete-v0", 1, 10, keep_in=kept)
    assert (kept / "config.json").is_file() and (kept / "checkpoints").is_dir()
    assert [json.loads(line)["step"] for line in (kept / "metrics.jsonl").read_text().splitlines()][-1] == 32
    with pytest.raises(FileExistsError):  # never trains over a kept run
        coverage_reward.train_and_evaluate(tiny_config(), "wanderlust/MazeDiscrete-v0", 1, 10, keep_in=kept)


def test_exploration_baselines_play_the_fixed_maze_when_given_a_layout_seed():
    from wanderlust.envs.maze import run_explorer

    fixed = exploration.baseline("oracle", 2, 60, layout_seed=3)["coverages"]
    kwargs = {"max_steps": 60, "discrete": False, "fixed_layout": True, "layout_seed": 3}
    assert fixed == [run_explorer("oracle", 60, seed=exploration.EVAL_SEED + i, env_kwargs=kwargs)["coverage"]
                     for i in range(2)]
    assert fixed != exploration.baseline("oracle", 2, 60)["coverages"]  # other mazes than the unseen ones


def test_exploration_baselines_start_in_the_top_left_cell_with_fixed_start():
    from wanderlust.envs.maze import run_explorer

    fixed = exploration.baseline("random", 2, 40, layout_seed=3, fixed_start=True)["coverages"]
    kwargs = {"max_steps": 40, "discrete": False, "fixed_layout": True, "layout_seed": 3, "start_cell": (0, 0)}
    assert fixed == [run_explorer("random", 40, seed=exploration.EVAL_SEED + i, env_kwargs=kwargs)["coverage"]
                     for i in range(2)]
    assert fixed != exploration.baseline("random", 2, 40, layout_seed=3)["coverages"]


def test_dead_units_finds_a_killed_layer_and_a_constant_encoder():
    import dead_units
    from wanderlust.agent.actor_critic import build_agent

    config = tiny_config(novelty_name="episodic")
    obs = dead_units.random_frames(config.env, 12, seed=0)
    torch.manual_seed(0)
    agent = build_agent(config, tuple(obs.shape[1:]), gymnasium.spaces.Box(-1.0, 1.0, (4,)))
    alive, spread = dead_units.alive_fractions(agent, obs)
    assert len(alive) >= 2 and all(0.2 < fraction <= 1.0 for fraction in alive.values())  # fresh: most fire
    assert spread["features"] > 0 and spread["value_int"] > 0
    first = next(m for m in agent.encoder.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)))
    with torch.no_grad():
        first.bias.fill_(-1e6)  # every unit of the first layer is negative for every frame: dead
    alive, spread = dead_units.alive_fractions(agent, obs)
    assert list(alive.values())[0] == 0.0
    assert spread["features"] == 0.0 and spread["policy head"] == 0.0  # the encoder sees nothing any more
    assert not any(h for m in agent.encoder.modules() for h in m._forward_hooks.values())  # hooks removed


def test_exploration_untrained_row_is_the_policy_before_any_update():
    config = tiny_config(noise_hold=4)
    row = exploration.evaluate_untrained(config, episodes=2, episode_steps=30)
    assert (row["method"], row["train_steps"], row["seed"]) == ("untrained policy", 0, config.seed)
    assert len(row["coverages"]) == 2 and all(0 < c <= 1 for c in row["coverages"])
    assert exploration.evaluate_untrained(config, 2, 30)["coverages"] == row["coverages"]  # seeded


def test_sweep_makes_every_method_variant_seed_job_and_labels_rows_by_variant():
    import sweep

    jobs = sweep.make_jobs(["episodic", "rnd"], [1, 2], [("hold8", ["noise_hold=8"]), ("hold1", ["noise_hold=1"])],
                           ["device=cuda"])
    assert [j.name for j in jobs][:4] == ["episodic-hold8-seed1", "episodic-hold8-seed2", "rnd-hold8-seed1",
                                         "rnd-hold8-seed2"]
    assert len(jobs) == 8 and jobs[-1].overrides == ["device=cuda", "noise_hold=1"]
    assert sweep.make_jobs(["pixel"], [3], [], [])[0].name == "pixel-seed3"
    rows = [{"method": "random"}, {"method": "untrained policy"}, {"method": "episodic"}, {"method": "oracle"}]
    assert [r["method"] for r in sweep.label_rows(rows, "hold8")] == [
        "random", "untrained policy [hold8]", "episodic [hold8]", "oracle"]


def test_sweep_runs_jobs_side_by_side_and_pools_their_seeds(tmp_path):
    """Two methods x one variant x two seeds as four processes (coverage_reward.py among them), then
    the pooled table; every job leaves its --json and log."""
    import subprocess

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "sweep.py"
    tiny = ["--set", "env.maze_size=5", "--set", "env.maze_obs_size=40", "--set", "env.num_envs=2",
            "--set", "ppo.num_steps=16", "--set", "encoder=seed"]
    done = subprocess.run([sys.executable, str(script), "--methods", "episodic,coverage-reward", "--seeds", "1,2",
                           "--variant", "h4", "noise_hold=4", "--steps", "32", "--episodes", "1", "--episode-steps",
                           "20", "--parallel", "4", "--out", str(tmp_path), *tiny],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    names = ["episodic-h4-seed1", "episodic-h4-seed2", "coverage-reward-h4-seed1", "coverage-reward-h4-seed2"]
    for name in names:
        assert (tmp_path / f"{name}.json").is_file() and (tmp_path / "logs" / f"{name}.log").is_file()
        assert f"| {name}" in done.stdout
    pooled = {line.split("|")[1].strip(): line for line in done.stdout.splitlines() if line.startswith("| ")}
    assert pooled["episodic [h4]"].split("|")[2].strip() == "2"  # two seeds pooled
    assert pooled["coverage reward [h4]"].split("|")[2].strip() == "2"
    assert json.loads((tmp_path / "episodic-h4-seed1.json").read_text())[1]["method"] == "untrained policy"


def test_action_stats_counts_saturated_sticks_and_plays_a_run(tmp_path):
    import action_stats

    stats = action_stats.stick_stats(np.array([[1.0, 0.0], [-0.5, 0.0], [0.96, 0.5]]))
    np.testing.assert_allclose(stats["mean"], [1.46 / 3, 0.5 / 3])
    np.testing.assert_allclose(stats["mean_abs"], [2.46 / 3, 0.5 / 3])
    np.testing.assert_allclose(stats["saturated"], [2 / 3, 0.0])
    with pytest.raises(ValueError, match="actions must be"):
        action_stats.stick_stats(np.zeros((0, 4)))
    config = tiny_config(noise_hold=4)
    config.env.max_episode_steps = 12
    actions, coverage = action_stats.play(config, action_stats.untrained(config), episodes=2, episode_steps=12)
    assert actions.shape == (24, 4) and np.abs(actions).max() <= 1.0 and 0 < coverage <= 1
