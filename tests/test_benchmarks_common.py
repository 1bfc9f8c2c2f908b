"""The pure helpers behind benchmarks/throughput.py and benchmarks/memory.py (no training here)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _common  # noqa: E402
import memory  # noqa: E402
import throughput  # noqa: E402

STATUS = """Name:\tpython
VmPeak:\t  900000 kB
VmHWM:\t  654321 kB
VmRSS:\t  123456 kB
Threads:\t2
"""


def test_parse_vm_rss_reads_the_named_line_in_kib():
    assert _common.parse_vm_rss_kib(STATUS) == 123456
    assert _common.parse_vm_rss_kib(STATUS, "VmHWM") == 654321


@pytest.mark.parametrize("text", ["Name: x\n", "VmRSS:\t 12 MB\n", "VmRSS:\t abc kB\n"])
def test_parse_vm_rss_rejects_missing_or_odd_lines(text):
    with pytest.raises(ValueError, match="VmRSS"):
        _common.parse_vm_rss_kib(text)


def test_rss_of_this_process_is_plausible_and_grows_with_a_big_allocation():
    import mmap

    before = _common.rss_mib()
    # a fresh anonymous mapping: malloc could hand back heap pages that are resident already
    block = mmap.mmap(-1, 64 * 1024 * 1024)
    try:
        for offset in range(0, len(block), mmap.PAGESIZE):
            block[offset] = 1  # touch every page so it is resident
        after = _common.rss_mib()
    finally:
        block.close()
    assert 1.0 < before < 100_000.0
    assert after - before > 48.0


def test_value_at_fraction_picks_first_point_at_or_past_the_fraction():
    points = [(1024, 10.0), (2048, 11.0), (3072, 12.0), (4096, 13.0)]
    assert _common.value_at_fraction(points, 0.1) == (1024, 10.0)  # target 409.6
    assert _common.value_at_fraction(points, 0.5) == (2048, 11.0)  # target 2048 exactly
    assert _common.value_at_fraction(points, 0.6) == (3072, 12.0)  # target 2457.6
    assert _common.value_at_fraction(points, 1.0) == (4096, 13.0)
    with pytest.raises(ValueError, match="no measurements"):
        _common.value_at_fraction([], 0.5)
    with pytest.raises(ValueError, match="fraction"):
        _common.value_at_fraction(points, 1.5)


def test_slope_is_the_least_squares_fit():
    # values 1, 2, 4 at steps 0, 1, 2: slope = sum((x - 1)(y - 7/3)) / sum((x - 1)^2) = (4/3 + 5/3) / 2 = 1.5
    assert _common.slope([(0, 1.0), (1, 2.0), (2, 4.0)]) == pytest.approx(1.5)
    assert _common.slope([(5, 3.0)]) == 0.0
    assert _common.slope([(5, 3.0), (5, 9.0)]) == 0.0


def test_sps_and_cell_formatting():
    assert _common.sps(1000, 4.0) == 250.0
    assert math.isnan(_common.sps(1000, 0.0))
    assert [_common.format_cell(v) for v in (16384, 1234.5, 12.34, 1.234, float("nan"), "x")] == [
        "16,384", "1,234", "12.3", "1.23", "nan", "x",
    ]


def test_markdown_table_aligns_columns_and_checks_row_width():
    table = _common.markdown_table(["name", "SPS"], [["sb3", 461.2], ["wanderlust", 9.5]])
    assert table.splitlines() == [
        "| name       | SPS  |",
        "|------------|------|",
        "| sb3        | 461  |",
        "| wanderlust | 9.50 |",
    ]
    with pytest.raises(ValueError, match="2 headers"):
        _common.markdown_table(["a", "b"], [[1]])


def test_thread_env_sets_every_thread_variable_and_the_src_path():
    env = _common.thread_env(3)
    assert [env[name] for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")] == ["3"] * 3
    assert env["PYTHONPATH"].split(":")[0] == str(_common.SRC_DIR)
    with pytest.raises(ValueError, match="threads"):
        _common.thread_env(0)


def test_measurement_times_from_the_first_update_mark():
    marks = [(1024, 12.0, 20.0), (2048, 14.0, 23.0), (3072, 16.0, 26.0)]
    m = throughput._measurement("none", start=10.0, marks=marks, parameters=7)
    assert (m.total_steps, m.total_seconds) == (3072, 6.0)
    assert (m.timed_steps, m.timed_seconds, m.timed_cpu_seconds) == (2048, 4.0, 6.0)


def _m(row, seconds, cpu=None):
    return throughput.Measurement(row, 2048, seconds + 1.0, 1024, seconds, cpu or seconds * 2, 100)


def test_summary_rows_ratio_to_sb3_with_best_and_median_of_repeats():
    results = {"sb3": [_m("sb3", 2.0), _m("sb3", 4.0)], "none": [_m("none", 1.0), _m("none", 3.0), _m("none", 8.0)]}
    best = {row[1]: row for row in throughput.summary_rows(results, "best")}
    assert best["-"][4] == pytest.approx(512.0)  # 1024 steps / 2 s
    assert best["none"][4] == pytest.approx(1024.0)
    assert best["none"][5] == pytest.approx(2.0)
    assert best["none"][3] == 1.0  # the fastest repeat's seconds
    median = {row[1]: row for row in throughput.summary_rows(results, "median")}
    assert median["-"][4] == pytest.approx((512.0 + 256.0) / 2)
    assert median["none"][4] == pytest.approx(1024 / 3)
    assert median["none"][8] == pytest.approx((1024 / 6) / ((256.0 + 128.0) / 2))  # CPU ratio


def test_throughput_arguments_quick_and_errors():
    args = throughput.parse_args(["--quick", "--rows", "sb3,none"])
    assert (args.steps, args.rows) == (throughput.QUICK_STEPS, ["sb3", "none"])
    with pytest.raises(SystemExit):
        throughput.parse_args(["--rows", "sb3,curious"])
    with pytest.raises(SystemExit):
        throughput.parse_args(["--steps", "1024"])


def test_memory_deciles_report_growth_per_10k_steps():
    points = [(step, 100.0 + step / 1000) for step in range(1000, 20_001, 1000)]  # +1 MiB per 1000 steps
    rows = memory.decile_rows(points)
    assert [row[0] for row in rows] == [f"{p}%" for p in range(10, 101, 10)]
    assert rows[0][1:3] == [2000, 102.0]
    assert math.isnan(rows[0][4])
    assert [row[4] for row in rows[1:]] == pytest.approx([10.0] * 9)
    assert memory.parse_args(["--quick"]).steps == memory.QUICK_STEPS


def test_memory_runs_the_default_preset_and_refuses_an_unknown_one(capsys):
    assert memory.parse_args([]).preset == "default"  # what `wanderlust train` with no arguments uses
    assert memory.main(["--quick", "--preset", "curious"]) == 2
    assert "unknown preset 'curious'" in capsys.readouterr().err
