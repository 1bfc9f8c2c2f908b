"""The benchmark scripts' building blocks run end to end on a tiny budget (no timing asserted)."""

from __future__ import annotations

import sys
from pathlib import Path

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
