"""Metric logging (TensorBoard + JSON lines) and the progress bar.

Metric names follow CleanRL (``charts/SPS``, ``charts/episodic_return``, ``losses/policy_loss``,
``novelty/...``); the caller chooses them. Each ``log`` call writes one scalar per metric to
TensorBoard (``run_dir/tb``) and one line ``{"step": .., "time": .., **metrics}`` to
``run_dir/metrics.jsonl`` (non-finite values as ``null``). ``log_image`` adds an image summary to
TensorBoard only.

On resume from a checkpoint at step ``S``, pass ``purge_step=S``: TensorBoard hides events at
steps >= S from the earlier session, and ``metrics.jsonl`` loses its lines with step >= S, so both
curves continue without duplicates.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
from tqdm import tqdm

from wanderlust.runtime.fs import atomic_write_bytes
from wanderlust.runtime.rundir import METRICS_FILE, TB_DIR

_RESERVED = ("step", "time")


class MetricLogger:
    """Writes scalar metrics of one run to TensorBoard and ``metrics.jsonl``; a context manager."""

    def __init__(self, run_dir: Path, tensorboard: bool = True, purge_step: int | None = None) -> None:
        if purge_step is not None and (type(purge_step) is not int or purge_step < 0):
            raise ValueError(f"purge_step must be an int >= 0 or None, got {purge_step!r}")
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.metrics_path = self.run_dir / METRICS_FILE
        if self.metrics_path.exists():
            _truncate_metrics(self.metrics_path, purge_step)
        self._jsonl = open(self.metrics_path, "a", encoding="utf-8")
        self._writer = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter  # imports tensorboard: only when asked

            self._writer = SummaryWriter(log_dir=str(self.run_dir / TB_DIR), purge_step=purge_step)

    def log(self, step: int, metrics: Mapping[str, Any]) -> None:
        """Record ``metrics`` (name -> number: float, int, 0-d tensor or numpy scalar) at ``step``."""
        if type(step) is not int or step < 0:
            raise ValueError(f"step must be an int >= 0, got {step!r}")
        if self._jsonl.closed:
            raise ValueError("MetricLogger is closed; create a new one to log more")
        values = {}
        for name, value in metrics.items():
            if not isinstance(name, str) or name in _RESERVED:
                raise ValueError(f"metric name {name!r} is not allowed; use a str other than 'step'/'time'")
            try:
                values[name] = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"metric {name!r} = {value!r} is not a number; log floats only") from None
        if self._writer is not None:
            for name, value in values.items():
                self._writer.add_scalar(name, value, global_step=step)
        line = {"step": step, "time": time.time()}
        line.update({name: value if math.isfinite(value) else None for name, value in values.items()})
        self._jsonl.write(json.dumps(line, allow_nan=False) + "\n")
        self._jsonl.flush()

    def log_image(self, step: int, tag: str, image: np.ndarray) -> None:
        """Record an image ``[H, W, 3]`` uint8 (RGB) under ``tag`` at ``step`` in TensorBoard (not in
        ``metrics.jsonl``); a no-op when TensorBoard is off."""
        if type(step) is not int or step < 0:
            raise ValueError(f"step must be an int >= 0, got {step!r}")
        image = np.asarray(image)
        if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3 or 0 in image.shape:
            raise ValueError(f"image {tag!r} must be a non-empty [H, W, 3] uint8 array, "
                             f"got {image.dtype} {image.shape}")
        if self._jsonl.closed:
            raise ValueError("MetricLogger is closed; create a new one to log more")
        if self._writer is not None:
            self._writer.add_image(tag, image, global_step=step, dataformats="HWC")

    def flush(self) -> None:
        """Push buffered TensorBoard events to disk (JSON lines are flushed on every ``log``)."""
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """Flush and close both outputs; safe to call twice."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if not self._jsonl.closed:
            self._jsonl.close()

    def __enter__(self) -> MetricLogger:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def _truncate_metrics(path: Path, purge_step: int | None) -> None:
    """Drop a torn last line (a crash mid-write) and, if ``purge_step`` is set, lines at/after it."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    complete, tail = lines[:-1], lines[-1]  # `tail` is b"" when the file ends with a newline
    if purge_step is not None:
        complete = [line for line in complete if _line_step(line) < purge_step]
    if tail or purge_step is not None:
        atomic_write_bytes(path, b"".join(line + b"\n" for line in complete))


def _line_step(line: bytes) -> float:
    """The step of one JSONL line; unreadable lines count as infinitely late (purged)."""
    try:
        step = json.loads(line)["step"]
    except (ValueError, KeyError, TypeError):
        return math.inf
    return step if isinstance(step, int) else math.inf


def read_metrics(path: Path) -> list[dict]:
    """Read ``metrics.jsonl`` (or a run folder holding one); ``null`` values come back as ``nan``."""
    path = Path(path)
    if path.is_dir():
        path = path / METRICS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; log some metrics first or check the run folder")
    rows = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except ValueError:
            raise ValueError(f"{path} line {number} is not valid JSON; delete that line") from None
        rows.append({key: math.nan if value is None else value for key, value in row.items()})
    return rows


def format_metric(name: str, value: float | int | str) -> str:
    """Compact text for one progress-bar value.

    ``SPS`` as an int (``"1234"``), anything named ``coverage`` (a fraction) as a percentage
    (``"42.5%"``), other numbers with 3 significant digits (``"0.0123"``), strings as they are.
    """
    if isinstance(value, str):
        return value
    value = float(value)
    short = name.rsplit("/", 1)[-1].lower()
    if not math.isfinite(value):
        return str(value)
    if short == "sps":
        return str(int(round(value)))
    if "coverage" in short:
        return f"{100.0 * value:.1f}%"
    return f"{value:.3g}"


def format_postfix(values: Mapping[str, float | int | str]) -> str:
    """``{"SPS": 1234.5, "coverage": 0.425}`` -> ``"SPS=1234, coverage=42.5%"``."""
    return ", ".join(f"{name}={format_metric(name, value)}" for name, value in values.items())


class ProgressBar:
    """A tqdm bar over environment steps, on stderr; a context manager."""

    def __init__(self, total: int, initial: int = 0, disable: bool = False) -> None:
        if total < 0 or initial < 0:
            raise ValueError(f"need 0 <= initial and total >= 0, got total={total}, initial={initial}")
        self._bar = tqdm(total=total, initial=initial, unit="step", dynamic_ncols=True,
                         file=sys.stderr, disable=disable)

    @property
    def n(self) -> int:
        """Steps counted so far (including ``initial``)."""
        return int(self._bar.n)

    def update(self, n: int, postfix: Mapping[str, float | int | str] | None = None) -> None:
        """Advance by ``n`` steps and show ``postfix`` (see :func:`format_metric`)."""
        if postfix:
            self._bar.set_postfix_str(format_postfix(postfix), refresh=False)
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
