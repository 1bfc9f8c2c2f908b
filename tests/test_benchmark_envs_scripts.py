"""The pure helpers behind benchmarks/mywayhome.py, minigrid_success.py and montezuma.py (no training)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _episodes  # noqa: E402


def test_success_rate_counts_positive_returns():
    assert _episodes.success_rate([0.0, 0.7, -0.21, 0.9]) == 0.5
    assert _episodes.success_rate([1.0]) == 1.0
    with pytest.raises(ValueError, match="no episodes"):
        _episodes.success_rate([])


def test_steps_to_finds_the_first_step_at_the_target():
    curve = [(100, 0.2), (200, 0.95), (300, 0.8), (400, 1.0)]
    assert _episodes.steps_to(curve, 0.9) == 200
    assert _episodes.steps_to(curve, 0.2) == 100
    assert _episodes.steps_to(curve, 1.1) is None


def test_mean_curve_averages_seeds_pointwise_and_refuses_mismatched_steps():
    assert _episodes.mean_curve([[(10, 0.0), (20, 1.0)], [(10, 0.5), (20, 0.5)], [(10, 1.0), (20, 0.0)]]) == [
        (10, 0.5), (20, 0.5)]
    with pytest.raises(ValueError, match="same steps"):
        _episodes.mean_curve([[(10, 0.0)], [(12, 0.0)]])


def test_udmf_blocks_read_keys_and_values():
    import mywayhome

    text = ('namespace = "zdoom";\nthing // 0\n{\nid = 22;\nx = 1040.000;\ntype = 2018;\n}\n'
            "vertex // 1\n{\nx = 1.5;\n}\n")
    assert mywayhome.udmf_blocks(text) == [("thing", {"id": "22", "x": "1040.000", "type": "2018"}),
                                            ("vertex", {"x": "1.5"})]


def test_walking_distance_in_a_corridor_with_a_bend():
    import mywayhome

    # An L-shaped corridor 64 wide: from (32, 32) east to (224, 32), then north to (224, 224).
    outline = [(0, 0), (256, 0), (256, 256), (192, 256), (192, 64), (0, 64)]
    vertices = "".join(f"vertex // {i}\n{{\nx = {x};\ny = {y};\n}}\n" for i, (x, y) in enumerate(outline))
    lines = "".join(f"linedef // {i}\n{{\nv1 = {i};\nv2 = {(i + 1) % 6};\nsidefront = 0;\n}}\n" for i in range(6))
    things = ("thing // 0\n{\nx = 224.0;\ny = 224.0;\ntype = 2018;\n}\n"
              "thing // 1\n{\nid = 10;\nx = 32.0;\ny = 32.0;\ntype = 9001;\n}\n")
    goal, spots = mywayhome.walking_distances(vertices + lines + things)
    assert goal == (224.0, 224.0)
    (position, distance), = spots.values()
    # Around the corner: 192 east + 192 north, a little less where the path cuts the inside corner;
    # far more than the straight line (271).
    assert position == (32.0, 32.0)
    assert 290 < distance <= 384


def test_the_sparse_starts_are_the_spots_the_distance_rule_picks():
    import vizdoom
    import mywayhome

    from wanderlust.envs.vizdoom_starts import START_SPOTS

    _, spots = mywayhome.walking_distances(mywayhome.read_textmap(Path(vizdoom.scenarios_path) / "my_way_home.wad"))
    assert len(spots) == 17
    farthest = max(spots, key=lambda spot: spots[spot][1])
    longest = spots[farthest][1]
    closest_to_ratio = min(spots, key=lambda spot: abs(spots[spot][1] / longest - 270 / 350))
    assert START_SPOTS["very_sparse"][0] == farthest
    assert START_SPOTS["sparse"][0] == closest_to_ratio
    for name, (spot, x, y) in START_SPOTS.items():
        assert spots[spot][0] == pytest.approx((x, y)), name
