"""Run folders: naming, refusal to overwrite, resume checks, config file, atomic writes."""

from __future__ import annotations

import os
import re

import pytest

from wanderlust.runtime.checkpoint import save_checkpoint
from wanderlust.runtime.fs import atomic_write_bytes, atomic_write_text
from wanderlust.runtime.rundir import (
    RunDirError,
    RunDirExistsError,
    create_run_dir,
    discard_untrained_run,
    load_config,
    save_config,
    slugify,
)


@pytest.mark.parametrize(
    ("part", "slug"),
    [
        ("wanderlust/Maze-v0", "wanderlust-Maze-v0"),
        ("ALE/MontezumaRevenge-v5", "ALE-MontezumaRevenge-v5"),
        ("rnd", "rnd"),
        ("a b//c", "a-b-c"),
        ("seed_1.5", "seed_1.5"),
    ],
)
def test_slugify(part, slug):
    assert slugify(part) == slug


def test_slugify_rejects_empty_names():
    with pytest.raises(ValueError, match="no usable characters"):
        slugify("///")


def test_default_run_dir_name_and_subfolders(tmp_path):
    first = create_run_dir(None, name_parts=["wanderlust/Maze-v0", "rnd", "s1"], resume=False, root=tmp_path)
    assert first.parent == tmp_path
    assert re.fullmatch(r"wanderlust-Maze-v0__rnd__s1__\d{8}-\d{6}(-\d+)?", first.name)
    assert (first / "checkpoints").is_dir() and (first / "tb").is_dir()
    second = create_run_dir(None, name_parts=["wanderlust/Maze-v0", "rnd", "s1"], resume=False, root=tmp_path)
    assert second != first and second.is_dir()  # same second: a suffixed name, never a shared folder


def test_existing_non_empty_folder_is_refused_without_resume(tmp_path):
    run = tmp_path / "run"
    assert create_run_dir(run, name_parts=[], resume=False) == run  # a new folder is fine
    with pytest.raises(RunDirExistsError):  # it now holds checkpoints/ and tb/
        create_run_dir(run, name_parts=[], resume=False)
    other = tmp_path / "other"
    other.mkdir()
    assert create_run_dir(other, name_parts=[], resume=False) == other  # an existing empty folder is fine
    (other / "config.json").write_text("{}")
    with pytest.raises(RunDirExistsError, match="already exists; pass --resume to continue it or choose another"):
        create_run_dir(other, name_parts=[], resume=False)
    assert issubclass(RunDirExistsError, ValueError)


def test_resume_needs_a_checkpoint(tmp_path):
    run = tmp_path / "run"
    with pytest.raises(RunDirError, match="no checkpoint"):
        create_run_dir(run, name_parts=[], resume=True)
    create_run_dir(run, name_parts=[], resume=False)
    with pytest.raises(RunDirError, match="drop --resume"):
        create_run_dir(run, name_parts=[], resume=True)
    save_checkpoint(run / "checkpoints", 10, {"x": 1})
    assert create_run_dir(run, name_parts=[], resume=True) == run
    with pytest.raises(RunDirError, match="--resume needs --run-dir"):
        create_run_dir(None, name_parts=["x"], resume=True, root=tmp_path)


def test_file_in_place_of_run_dir_is_refused(tmp_path):
    (tmp_path / "run").write_text("x")
    with pytest.raises(RunDirError, match="is a file"):
        create_run_dir(tmp_path / "run", name_parts=[], resume=False)


def test_config_round_trip_is_sorted_and_indented(tmp_path):
    config = {"ppo": {"lr": 2.5e-4, "clip": 0.1}, "env_id": "wanderlust/Maze-v0", "seed": 1}
    path = save_config(tmp_path, config)
    text = path.read_text()
    assert text.index('"env_id"') < text.index('"ppo"') < text.index('"seed"')
    assert '\n  "env_id"' in text
    assert load_config(tmp_path) == config
    with pytest.raises(TypeError, match="dataclasses.asdict"):
        save_config(tmp_path, {"bad": object()})
    assert load_config(tmp_path) == config  # the failed save left the old file intact


def test_load_config_errors(tmp_path):
    with pytest.raises(RunDirError, match="not found"):
        load_config(tmp_path)
    (tmp_path / "config.json").write_text("{broken")
    with pytest.raises(RunDirError, match="corrupt"):
        load_config(tmp_path)
    (tmp_path / "config.json").write_text("[1, 2]")
    with pytest.raises(RunDirError, match="not a JSON object"):
        load_config(tmp_path)


def test_atomic_write_replaces_whole_file_and_cleans_up_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "latest"
    atomic_write_text(target, "one\n")
    atomic_write_bytes(target, b"two\n")
    assert target.read_bytes() == b"two\n"

    def broken_replace(src, dst):
        raise OSError("simulated crash")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        atomic_write_text(target, "three\n")
    monkeypatch.undo()
    assert target.read_text() == "two\n"
    assert [p.name for p in tmp_path.iterdir()] == ["latest"]


def test_discard_untrained_run_removes_only_a_run_with_nothing_saved(tmp_path):
    empty = create_run_dir(tmp_path / "empty", name_parts=(), resume=False)
    save_config(empty, {"seed": 1})
    (empty / "metrics.jsonl").write_text("")
    assert discard_untrained_run(empty) and not empty.exists()

    logged = create_run_dir(tmp_path / "logged", name_parts=(), resume=False)
    (logged / "metrics.jsonl").write_text('{"step": 32}\n')
    assert not discard_untrained_run(logged) and (logged / "metrics.jsonl").exists()

    saved = create_run_dir(tmp_path / "saved", name_parts=(), resume=False)
    save_checkpoint(saved / "checkpoints", 10, {"x": 1})
    assert not discard_untrained_run(saved) and (saved / "checkpoints").exists()
