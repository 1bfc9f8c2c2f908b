"""benchmarks/scaling.py: the configs it trains, its table and its arguments (no timing asserted)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import scaling  # noqa: E402


@pytest.mark.parametrize("pool, workers, expected_workers, expected_address", [
    ("single", 4, 0, None), ("local", 2, 2, None), ("ray", 4, 4, "local"),
])
def test_rows_differ_only_in_how_rollouts_are_collected(pool, workers, expected_workers, expected_address):
    config = scaling.bench_config("maze", pool, workers, updates=3, quick=True, seed=1, threads=1)
    assert (config.workers, config.ray_address, config.novelty_name) == (expected_workers, expected_address, "none")
    assert config.num_updates == 3 and config.checkpoint_every > config.total_steps


def test_vizdoom_rows_use_the_icm_vizdoom_settings_on_my_way_home():
    config = scaling.bench_config("vizdoom", "local", 4, updates=3, quick=True, seed=1, threads=1)
    assert config.env.env_id == "VizdoomMyWayHome-v1" and config.env.vizdoom_resolution == "160x120"
    assert (config.env.num_envs, config.ppo.num_steps) == (8, 64)


def test_table_reports_the_ratio_to_the_single_process_run_of_the_same_env():
    rows = [scaling.Row("maze", "single", 0, 1000, 10.0, 0.0, 50.0),
            scaling.Row("maze", "ray", 2, 1000, 5.0, 20.0, 50.0),
            scaling.Row("vizdoom", "local", 2, 600, 3.0, 7.0, 1.0)]
    lines = scaling.table(rows)
    assert lines[0][4:6] == [100.0, 1.0]
    assert lines[1][4:7] == [200.0, 2.0, 20.0]
    assert lines[2][4] == 200.0 and lines[2][5] != lines[2][5]  # no single-process vizdoom row: nan


@pytest.mark.parametrize("argv, message", [
    (["--envs", "atari"], "unknown env/pool atari"), (["--updates", "1"], "--updates must be >= 2"),
    (["--workers", "two"], "comma-separated integers"),
])
def test_bad_arguments_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit):
        scaling.parse_args(argv)
    assert message in capsys.readouterr().err
