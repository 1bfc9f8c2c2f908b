"""Checkpoints: written atomically, loaded without running pickled code.

A checkpoint is a folder ``ckpt-{step:012d}/`` inside a checkpoints directory::

    checkpoints/
      latest                      # text: the name of the newest complete checkpoint folder
      ckpt-000000001024/
        tensors.safetensors       # every tensor and numpy array of the state, flat
        state.json                # the nested state, with tensors replaced by references
        manifest.json             # format, version, step, sha256 of the two files above

The state (nested dicts, lists, tuples, tensors, numpy arrays and scalars, ints of any size, floats
incl. nan/inf, bools, strings, None) is encoded by :mod:`wanderlust.runtime.state_codec`.

Loading reads bytes, checks their sha256 against the manifest, and parses them with safetensors and
``json``: no pickle, no ``torch.load``. Tensors come back on ``device`` (CPU by default) and shared
or non-contiguous tensors come back as independent contiguous copies.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import NamedTuple

import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save_file as save_safetensors

from wanderlust.runtime.fs import atomic_write_text, fsync_dir, fsync_file
from wanderlust.runtime.state_codec import flatten_state, unflatten_state

FORMAT = "wanderlust-checkpoint"
VERSION = 1
TENSORS_FILE = "tensors.safetensors"
STATE_FILE = "state.json"
MANIFEST_FILE = "manifest.json"
LATEST_FILE = "latest"
_NAME_RE = re.compile(r"ckpt-(\d{12,})")
_TMP_PREFIX = ".tmp-ckpt-"


class CheckpointError(ValueError):
    """A checkpoint is missing, foreign or corrupt; the message says which and what to do."""


class LoadedCheckpoint(NamedTuple):
    path: Path
    """The checkpoint folder that was loaded."""
    step: int
    """The step recorded in its manifest."""
    state: dict
    """The nested state as saved."""


def checkpoint_name(step: int) -> str:
    """Folder name of the checkpoint at ``step`` (``ckpt-000000001024``)."""
    return f"ckpt-{step:012d}"


def checkpoint_step(path: Path) -> int:
    """Step encoded in a checkpoint folder name; ``ValueError`` if it is not one."""
    match = _NAME_RE.fullmatch(Path(path).name)
    if match is None:
        raise ValueError(f"{path} is not named like a checkpoint (ckpt-<12 digits>)")
    return int(match.group(1))


def list_checkpoints(directory: Path) -> list[Path]:
    """Checkpoint folders in ``directory`` sorted by step (oldest first); ``[]`` if none or missing."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = [p for p in directory.iterdir() if _NAME_RE.fullmatch(p.name) and p.is_dir()]
    return sorted(found, key=checkpoint_step)


def save_checkpoint(directory: Path, step: int, state: dict, keep: int | None = 3) -> Path:
    """Write ``state`` as ``directory/ckpt-{step:012d}`` atomically and return that folder.

    Files go into a temporary folder in ``directory`` (each fsynced), which is renamed into place;
    then ``directory/latest`` is replaced atomically; then all but the newest ``keep`` checkpoints
    are deleted (never the one just written; ``keep=None`` keeps all). An existing checkpoint at
    the same step is replaced. A crash at any point leaves the previous checkpoint loadable.
    """
    if type(step) is not int or step < 0:
        raise ValueError(f"checkpoint step must be an int >= 0, got {step!r}")
    if not isinstance(state, dict):
        raise TypeError(f"checkpoint state must be a dict, got {type(state).__qualname__}")
    if keep is not None and (type(keep) is not int or keep < 1):
        raise ValueError(f"keep must be an int >= 1 or None (keep all), got {keep!r}")
    tree, tensors = flatten_state(state)  # TypeError here, before anything touches the disk
    state_bytes = (json.dumps(tree, allow_nan=False, indent=1) + "\n").encode("utf-8")

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / checkpoint_name(step)
    tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=directory))
    try:
        save_safetensors(tensors, str(tmp / TENSORS_FILE), metadata={"format": FORMAT})
        fsync_file(tmp / TENSORS_FILE)
        _write_synced(tmp / STATE_FILE, state_bytes)
        files = {name: {"sha256": _sha256_file(tmp / name), "bytes": (tmp / name).stat().st_size}
                 for name in (TENSORS_FILE, STATE_FILE)}
        manifest = {
            "format": FORMAT, "version": VERSION, "step": step, "files": files,
            "created_unix": time.time(), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        _write_synced(tmp / MANIFEST_FILE, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
        fsync_dir(tmp)
        _move_into_place(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_dir(directory)
    atomic_write_text(directory / LATEST_FILE, final.name + "\n")
    if keep is not None:
        _prune(directory, keep, final)
    return final


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _move_into_place(tmp: Path, final: Path) -> None:
    if not final.exists():
        os.rename(tmp, final)
        return
    old = final.parent / f"{_TMP_PREFIX}old-{final.name}-{uuid.uuid4().hex[:8]}"
    os.rename(final, old)
    try:
        os.rename(tmp, final)
    except BaseException:
        os.rename(old, final)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _prune(directory: Path, keep: int, just_written: Path) -> None:
    checkpoints = list_checkpoints(directory)
    kept = set(checkpoints[-keep:]) | {just_written}
    for folder in checkpoints:
        if folder not in kept:
            trash = directory / f"{_TMP_PREFIX}old-{folder.name}-{uuid.uuid4().hex[:8]}"
            os.rename(folder, trash)  # a half-deleted folder must never look like a checkpoint
            shutil.rmtree(trash, ignore_errors=True)
    for leftover in directory.glob(f"{_TMP_PREFIX}*"):  # from writers that crashed (single writer assumed)
        shutil.rmtree(leftover, ignore_errors=True)


def load_checkpoint(path: Path, *, device: str | torch.device = "cpu") -> dict:
    """Load the state saved by :func:`save_checkpoint`; see :func:`read_checkpoint` for ``path``."""
    return read_checkpoint(path, device=device).state


def read_checkpoint(path: Path, *, device: str | torch.device = "cpu") -> LoadedCheckpoint:
    """Load a checkpoint and say which one was loaded.

    ``path`` is a checkpoint folder (loaded as is), a checkpoints directory (the one named in
    ``latest``; if that one is corrupt, the newest valid older one, with a warning) or a run folder
    holding ``checkpoints/``. Raises :class:`CheckpointError` when nothing valid is found.
    """
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"no checkpoint found at {path} (it does not exist); train first or check the path")
    if not path.is_dir():
        raise CheckpointError(f"{path} is not a wanderlust checkpoint (a file, not a ckpt-* folder); pass the folder")
    if _looks_like_checkpoint(path):
        return _load_folder(path, torch.device(device))
    if not (path / LATEST_FILE).exists() and not list_checkpoints(path) and (path / "checkpoints").is_dir():
        path = path / "checkpoints"
    return _load_newest(path, torch.device(device))


def _looks_like_checkpoint(path: Path) -> bool:
    return bool(_NAME_RE.fullmatch(path.name)) or any(
        (path / name).exists() for name in (MANIFEST_FILE, TENSORS_FILE, STATE_FILE)
    )


def _load_newest(directory: Path, device: torch.device) -> LoadedCheckpoint:
    checkpoints = list_checkpoints(directory)
    latest_file = directory / LATEST_FILE
    candidates = list(reversed(checkpoints))
    if latest_file.exists():
        name = latest_file.read_text(encoding="utf-8", errors="replace").strip()
        if _NAME_RE.fullmatch(name) and (directory / name).is_dir():
            latest = directory / name
            candidates = [latest] + [c for c in candidates if checkpoint_step(c) < checkpoint_step(latest)]
        elif candidates:
            warnings.warn(f"{latest_file} names {name!r}, which is not a checkpoint here; using {candidates[0]}",
                          stacklevel=3)
    if not candidates:
        if any(not p.name.startswith(".") for p in directory.iterdir()):
            raise CheckpointError(
                f"{directory} is not a wanderlust checkpoint (no {MANIFEST_FILE}) nor a folder of ckpt-* "
                "checkpoints; pass a checkpoint folder or the checkpoints folder of a run"
            )
        raise CheckpointError(f"no checkpoint found in {directory}; train first or check the path")
    errors = []
    for folder in candidates:
        try:
            loaded = _load_folder(folder, device)
        except CheckpointError as error:
            errors.append(str(error))
            continue
        if errors:
            warnings.warn(f"{'; '.join(errors)}; loaded the older {folder} instead", stacklevel=3)
        return loaded
    raise CheckpointError(f"no valid checkpoint in {directory}: {errors[0]}")


def _corrupt(folder: Path, reason: str) -> CheckpointError:
    return CheckpointError(f"checkpoint {folder} is corrupt ({reason}); delete it or pass an older one")


def _load_folder(folder: Path, device: torch.device) -> LoadedCheckpoint:
    if not folder.is_dir():
        raise CheckpointError(f"no checkpoint found at {folder}; train first or check the path")
    if not (folder / MANIFEST_FILE).is_file():
        raise CheckpointError(
            f"{folder} is not a wanderlust checkpoint (no {MANIFEST_FILE}); pass a ckpt-* folder written by wanderlust"
        )
    try:
        manifest = json.loads((folder / MANIFEST_FILE).read_bytes())
    except ValueError:
        raise _corrupt(folder, f"{MANIFEST_FILE} is not valid JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CheckpointError(f"{folder} is not a wanderlust checkpoint ({MANIFEST_FILE} has another format)")
    version = manifest.get("version")
    if type(version) is not int:
        raise _corrupt(folder, f"{MANIFEST_FILE} has no version")
    if version != VERSION:
        raise CheckpointError(
            f"checkpoint {folder} has format version {version}, this wanderlust reads version {VERSION}; "
            "use the wanderlust version that wrote it"
        )
    step, files = manifest.get("step"), manifest.get("files")
    if type(step) is not int or not isinstance(files, dict):
        raise _corrupt(folder, f"{MANIFEST_FILE} lacks step or files")
    contents = {}
    for name in (TENSORS_FILE, STATE_FILE):
        entry = files.get(name)
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            raise _corrupt(folder, f"{MANIFEST_FILE} has no checksum for {name}")
        try:
            data = (folder / name).read_bytes()
        except OSError:
            raise _corrupt(folder, f"{name} is missing or unreadable") from None
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise _corrupt(folder, f"{name} checksum mismatch")
        contents[name] = data
    try:
        tensors = load_safetensors(contents[TENSORS_FILE])
    except Exception as error:  # safetensors raises its own error types on malformed input
        raise _corrupt(folder, f"{TENSORS_FILE} is not a valid safetensors file: {type(error).__name__}") from None
    try:
        state = unflatten_state(json.loads(contents[STATE_FILE]), tensors, device)
    except ValueError as error:
        raise _corrupt(folder, f"{STATE_FILE}: {error}") from None
    if not isinstance(state, dict):
        raise _corrupt(folder, f"{STATE_FILE} does not hold a dict")
    return LoadedCheckpoint(folder, step, state)
