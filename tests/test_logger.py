"""Metric logging to JSON lines and TensorBoard, resume purge, and the progress bar."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from wanderlust.runtime.logger import MetricLogger, ProgressBar, format_metric, format_postfix, read_metrics


def tb_scalars(run_dir, tag):
    accumulator = EventAccumulator(str(run_dir / "tb"))
    accumulator.Reload()
    return [(event.step, event.value) for event in accumulator.Scalars(tag)]


def test_log_writes_json_lines_and_tensorboard_scalars(tmp_path):
    with MetricLogger(tmp_path) as logger:
        logger.log(0, {"charts/SPS": 100.0, "losses/policy_loss": -0.5})
        logger.log(128, {"charts/SPS": np.float32(250.0), "losses/policy_loss": torch.tensor(0.25),
                         "charts/episodic_return": 3})
        logger.log(256, {"losses/policy_loss": float("nan"), "novelty/rnd_loss": float("inf")})
    raw = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert len(raw) == 3
    strict = [json.loads(line, parse_constant=lambda token: pytest.fail(token)) for line in raw]
    assert strict[2]["losses/policy_loss"] is None and strict[2]["novelty/rnd_loss"] is None
    assert all(row["time"] > 1.6e9 for row in strict)

    rows = read_metrics(tmp_path)
    assert [row["step"] for row in rows] == [0, 128, 256]
    assert rows[1]["charts/SPS"] == 250.0 and rows[1]["losses/policy_loss"] == 0.25
    assert rows[1]["charts/episodic_return"] == 3.0
    assert math.isnan(rows[2]["losses/policy_loss"])

    assert tb_scalars(tmp_path, "charts/SPS") == [(0, 100.0), (128, 250.0)]
    assert tb_scalars(tmp_path, "losses/policy_loss")[:2] == [(0, -0.5), (128, 0.25)]


def test_resume_purges_later_steps_from_both_outputs(tmp_path):
    with MetricLogger(tmp_path) as logger:
        for step in range(10):
            logger.log(step, {"charts/coverage": float(step)})
    # TensorBoard orders event files by name, which starts with the creation second; a resumed run
    # is a later process, so give the second writer a later second (same-second names can sort
    # out of order once the in-process file counter passes 9).
    time.sleep(1.05)
    with MetricLogger(tmp_path, purge_step=5) as logger:
        assert [row["step"] for row in read_metrics(tmp_path)] == [0, 1, 2, 3, 4]
        for step in range(5, 8):
            logger.log(step, {"charts/coverage": 100.0 + step})
    rows = read_metrics(tmp_path)
    assert [(row["step"], row["charts/coverage"]) for row in rows] == [
        (0, 0.0), (1, 1.0), (2, 2.0), (3, 3.0), (4, 4.0), (5, 105.0), (6, 106.0), (7, 107.0)
    ]
    assert tb_scalars(tmp_path, "charts/coverage") == [
        (0, 0.0), (1, 1.0), (2, 2.0), (3, 3.0), (4, 4.0), (5, 105.0), (6, 106.0), (7, 107.0)
    ]


def test_torn_last_line_is_dropped_before_appending(tmp_path):
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "time": 1.0, "a": 1.0}\n{"step": 2, "ti')
    with MetricLogger(tmp_path, tensorboard=False) as logger:
        logger.log(3, {"a": 3.0})
    assert [row["step"] for row in read_metrics(tmp_path)] == [1, 3]
    assert not (tmp_path / "tb").exists()


def test_bad_metrics_and_closed_logger_raise(tmp_path):
    logger = MetricLogger(tmp_path, tensorboard=False)
    with pytest.raises(ValueError, match="not a number"):
        logger.log(0, {"a": "fast"})
    with pytest.raises(ValueError, match="not allowed"):
        logger.log(0, {"step": 1.0})
    with pytest.raises(ValueError, match="step must be"):
        logger.log(-1, {"a": 1.0})
    logger.close()
    logger.close()
    with pytest.raises(ValueError, match="closed"):
        logger.log(1, {"a": 1.0})
    with pytest.raises(ValueError, match="purge_step"):
        MetricLogger(tmp_path, tensorboard=False, purge_step=-3)


def test_read_metrics_reports_missing_and_corrupt_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="metrics.jsonl"):
        read_metrics(tmp_path)
    (tmp_path / "metrics.jsonl").write_text('{"step": 0}\nnot json\n')
    with pytest.raises(ValueError, match="line 2"):
        read_metrics(tmp_path / "metrics.jsonl")


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        ("SPS", 1234.6, "1235"),
        ("charts/SPS", 99.2, "99"),
        ("coverage", 0.425, "42.5%"),
        ("charts/coverage", 1.0, "100.0%"),
        ("novelty", 0.012345, "0.0123"),
        ("novelty/rnd", 12345.0, "1.23e+04"),
        ("return", 3, "3"),
        ("phase", "warmup", "warmup"),
        ("loss", float("nan"), "nan"),
    ],
)
def test_format_metric(name, value, text):
    assert format_metric(name, value) == text


def test_progress_bar_writes_to_stderr_with_compact_postfix(capsys):
    with ProgressBar(total=1000, initial=200) as bar:
        bar.update(300, {"SPS": 512.7, "coverage": 0.5, "novelty": 0.98765})
        assert bar.n == 500
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "500/1000" in captured.err and "step" in captured.err
    assert "SPS=513, coverage=50.0%, novelty=0.988" in captured.err
    assert format_postfix({"SPS": 1.0, "coverage": 0.1}) == "SPS=1, coverage=10.0%"

    with ProgressBar(total=10, disable=True) as quiet:
        quiet.update(5, {"SPS": 1.0})
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError, match="initial"):
        ProgressBar(total=10, initial=-1)
