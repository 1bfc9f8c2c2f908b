"""Shared helpers for the benchmark scripts: import path, thread setup, RSS, tables, small statistics.

Run the scripts from anywhere (``python benchmarks/throughput.py``): importing this module puts
``<repo>/src`` first on ``sys.path``, so ``wanderlust`` is importable without ``pip install``.
The helpers below are pure (no torch import) so they are cheap to test.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import os
import statistics
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SRC_DIR = REPO_ROOT / "src"


@contextlib.contextmanager
def run_folder(keep: Path | None, prefix: str) -> Iterator[Path]:
    """A temporary run folder (removed afterwards), or ``keep``, created here (it must not exist
    yet, so a kept run is never trained over) and left in place."""
    if keep is None:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            yield Path(tmp)
    else:
        keep.mkdir(parents=True, exist_ok=False)
        yield keep


def add_src_to_path() -> None:
    """Put ``<repo>/src`` first on ``sys.path`` (idempotent)."""
    src = str(SRC_DIR)
    if src not in sys.path:
        sys.path.insert(0, src)


add_src_to_path()

_THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def default_threads() -> int:
    """All cores of this machine (the torch default), at least 1."""
    return max(1, os.cpu_count() or 1)


def thread_env(threads: int) -> dict[str, str]:
    """A copy of ``os.environ`` with the BLAS/OpenMP thread counts set to ``threads`` (for subprocesses)."""
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    env = dict(os.environ)
    for name in _THREAD_ENV_VARS:
        env[name] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC_DIR), env.get("PYTHONPATH", "")) if p)
    return env


def set_torch_threads(threads: int) -> None:
    """``torch.set_num_threads(threads)`` and one inter-op thread, explicitly, in this process."""
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set (inter-op pool started): keep going, intra-op is what matters
        pass


def parse_vm_rss_kib(status_text: str, key: str = "VmRSS") -> int:
    """The ``key`` line of ``/proc/<pid>/status`` (``"VmRSS:   123456 kB"``) in KiB."""
    for line in status_text.splitlines():
        name, _, rest = line.partition(":")
        if name == key:
            fields = rest.split()
            if len(fields) != 2 or fields[1] != "kB" or not fields[0].isdigit():
                raise ValueError(f"cannot parse '{line.strip()}' as '{key}: <int> kB'")
            return int(fields[0])
    raise ValueError(f"no '{key}' line in the status text; is this a Linux /proc/<pid>/status?")


def rss_mib(key: str = "VmRSS") -> float:
    """This process's resident set size (``VmRSS``) or peak (``VmHWM``) in MiB, from /proc/self/status."""
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        raise ValueError("reading RSS needs Linux /proc/self/status; run the memory benchmark on Linux") from None
    return parse_vm_rss_kib(text, key) / 1024.0


def release_free_memory() -> bool:
    """``gc.collect()`` then glibc's ``malloc_trim(0)``, so RSS counts live memory rather than freed
    heap pages the allocator keeps for reuse. False where there is no glibc (RSS stays raw)."""
    gc.collect()
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    if not hasattr(libc, "malloc_trim"):
        return False
    libc.malloc_trim(0)
    return True


def value_at_fraction(points: Sequence[tuple[int, float]], fraction: float) -> tuple[int, float]:
    """The first ``(step, value)`` with ``step >= fraction * last step`` from points sorted by step.

    >>> value_at_fraction([(10, 1.0), (20, 2.0), (30, 3.0), (40, 4.0)], 0.5)
    (20, 2.0)
    """
    if not points:
        raise ValueError("no measurements: run at least one update")
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be in [0, 1], got {fraction}")
    target = fraction * points[-1][0]
    for step, value in points:
        if step >= target:
            return step, value
    return points[-1]


def slope(points: Sequence[tuple[int, float]]) -> float:
    """Least-squares slope d value / d step of ``(step, value)`` points (0 for fewer than 2 steps).

    >>> slope([(0, 1.0), (10, 3.0), (20, 5.0)])
    0.2
    """
    if len({step for step, _ in points}) < 2:
        return 0.0
    steps = [float(s) for s, _ in points]
    values = [float(v) for _, v in points]
    mean_s, mean_v = statistics.fmean(steps), statistics.fmean(values)
    covariance = sum((s - mean_s) * (v - mean_v) for s, v in zip(steps, values))
    variance = sum((s - mean_s) ** 2 for s in steps)
    return covariance / variance


def sps(steps: int, seconds: float) -> float:
    """Env steps per second; ``nan`` for a non-positive duration."""
    return steps / seconds if seconds > 0 else float("nan")


def format_cell(value: object) -> str:
    """Numbers as short human text: ints with thousands separators, floats with 2-3 significant decimals."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:  # nan
            return "nan"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    return str(value)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub markdown table; cells go through :func:`format_cell`, columns padded to align.

    >>> print(markdown_table(["a", "b"], [[1, 2.5]]))
    | a | b    |
    |---|------|
    | 1 | 2.50 |
    """
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row {list(row)} has {len(row)} cells for {len(headers)} headers")
    text_rows = [[format_cell(cell) for cell in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in text_rows)) for i, h in enumerate(headers)]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in text_rows]
    return "\n".join(lines)
