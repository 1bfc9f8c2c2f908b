"""Crash-safe file writes shared by the run folder, config and checkpoint code.

A write either leaves the old file untouched or the complete new one: the bytes go to a temporary
file in the same folder, are flushed to disk (``fsync``), and then ``os.replace`` swaps the name
atomically. The folder itself is fsynced afterwards so the rename survives a power cut (POSIX).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def fsync_file(path: Path) -> None:
    """Flush a file's content to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Flush a folder's entries (new names, renames) to disk; a no-op where folders cannot be opened."""
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (temp file in the same folder, fsync, ``os.replace``).

    The parent folder must exist. If anything fails, ``path`` keeps its previous content and the
    temporary file is removed.
    """
    path = Path(path)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` with UTF-8 ``text`` atomically (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"))
