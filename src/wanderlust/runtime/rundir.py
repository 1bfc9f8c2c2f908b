"""The run folder: one per training run, holding everything it produces.

::

    runs/wanderlust-Maze-v0__rnd__s1__20250101-120000/
      config.json       # the resolved config (save_config / load_config)
      metrics.jsonl     # one JSON line per logged step (MetricLogger)
      tb/               # TensorBoard event files
      checkpoints/      # ckpt-*/ folders and `latest` (save_checkpoint)
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from wanderlust.runtime.checkpoint import list_checkpoints
from wanderlust.runtime.fs import atomic_write_bytes, atomic_write_text

__all__ = [
    "CHECKPOINTS_DIR", "CONFIG_FILE", "METRICS_FILE", "TB_DIR", "RunDirError", "RunDirExistsError",
    "atomic_write_bytes", "atomic_write_text", "create_run_dir", "discard_untrained_run", "load_config", "save_config",
    "slugify",
]

CHECKPOINTS_DIR = "checkpoints"
TB_DIR = "tb"
CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"


class RunDirError(ValueError):
    """A run folder cannot be used as asked; the message says what to do."""


class RunDirExistsError(RunDirError):
    """The run folder already holds a run and ``--resume`` was not given."""


def slugify(part: str) -> str:
    """Make one name part safe for a folder name: ``"wanderlust/Maze-v0"`` -> ``"wanderlust-Maze-v0"``."""
    slug = re.sub(r"-{2,}", "-", re.sub(r"[^A-Za-z0-9._-]", "-", str(part))).strip("-.")
    if not slug:
        raise ValueError(f"run name part {part!r} has no usable characters; use letters, digits, '.', '_' or '-'")
    return slug


def create_run_dir(
    path: Path | None, *, name_parts: Sequence[str], resume: bool, root: Path = Path("runs"),
) -> Path:
    """Create (or, with ``resume``, reopen) a run folder with ``checkpoints/`` and ``tb/`` inside.

    ``path=None`` makes ``root/<slugified parts joined by "__">__<YYYYmmdd-HHMMSS>`` (a ``-2``,
    ``-3``... suffix if that exists). An existing non-empty ``path`` is refused unless ``resume``;
    ``resume`` needs a ``path`` whose ``checkpoints/`` holds at least one checkpoint.
    """
    if path is None:
        if resume:
            raise RunDirError("--resume needs --run-dir: name the run folder to continue")
        if not name_parts:
            raise ValueError("name_parts is empty; give at least one part (e.g. the env id) to name the run")
        base = "__".join(slugify(part) for part in name_parts) + "__" + time.strftime("%Y%m%d-%H%M%S")
        path = _fresh_folder(Path(root), base)
    else:
        path = Path(path)
        if path.exists() and not path.is_dir():
            raise RunDirError(f"run folder {path} is a file; choose another --run-dir")
        if resume:
            if not list_checkpoints(path / CHECKPOINTS_DIR):
                raise RunDirError(
                    f"cannot resume {path}: it has no checkpoint in {path / CHECKPOINTS_DIR}; "
                    "drop --resume to start a new run or pass the folder of a run that saved one"
                )
        elif path.exists() and any(path.iterdir()):
            raise RunDirExistsError(
                f"run folder {path} already exists; pass --resume to continue it or choose another --run-dir"
            )
        path.mkdir(parents=True, exist_ok=True)
    (path / CHECKPOINTS_DIR).mkdir(exist_ok=True)
    (path / TB_DIR).mkdir(exist_ok=True)
    return path


def _fresh_folder(root: Path, base: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, 1000):
        candidate = root / (base if attempt == 1 else f"{base}-{attempt}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise RunDirError(f"could not find a free run folder name for {root / base}; pass --run-dir")


def save_config(run_dir: Path, config: dict) -> Path:
    """Write ``config`` (plain JSON values) to ``run_dir/config.json`` atomically; returns the path."""
    try:
        text = json.dumps(config, indent=2, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"config is not plain JSON ({error}); convert it with dataclasses.asdict and paths to str first"
        ) from None
    path = Path(run_dir) / CONFIG_FILE
    atomic_write_text(path, text + "\n")
    return path


def load_config(run_dir: Path) -> dict:
    """Read ``run_dir/config.json``; :class:`RunDirError` when it is missing or not a JSON object."""
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise RunDirError(f"{path} not found; is {run_dir} a wanderlust run folder?")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise RunDirError(f"{path} is corrupt ({error}); restore it or start a new run") from None
    if not isinstance(config, dict):
        raise RunDirError(f"{path} is corrupt (not a JSON object); restore it or start a new run")
    return config


def discard_untrained_run(run_dir: Path) -> bool:
    """Remove a run folder that a failed set-up left with nothing in it: no checkpoint and no logged
    metric (only the config and empty folders). Returns whether it was removed.

    A new run that stops before its first update (a bad novelty setting, an env that cannot start)
    then leaves no folder behind, so the same ``--run-dir`` works once the mistake is fixed. A folder
    holding any checkpoint or metric line is kept.
    """
    run_dir = Path(run_dir)
    metrics = run_dir / METRICS_FILE
    if list_checkpoints(run_dir / CHECKPOINTS_DIR) or (metrics.exists() and metrics.stat().st_size > 0):
        return False
    shutil.rmtree(run_dir, ignore_errors=True)
    return True
