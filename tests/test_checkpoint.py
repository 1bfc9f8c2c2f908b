"""Checkpoints: state encoding, atomic save, verified load, fallback, pruning, RNG state."""

from __future__ import annotations

import collections
import hashlib
import json
import math
import os
import pickle
import random
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from wanderlust.runtime import checkpoint as ckpt_module
from wanderlust.runtime.checkpoint import (
    CheckpointError,
    checkpoint_step,
    list_checkpoints,
    load_checkpoint,
    read_checkpoint,
    save_checkpoint,
)
from wanderlust.runtime.normalize import DiscountedReturnNormalizer, RunningMeanStd
from wanderlust.runtime.rng import capture_rng_state, restore_rng_state, seed_everything
from wanderlust.runtime.state_codec import flatten_state, unflatten_state


def assert_same(actual, expected, path="state"):
    """Deep equality that also checks exact types, dtypes and shapes; nan equals nan."""
    assert type(actual) is type(expected) or (isinstance(expected, dict) and type(actual) is dict), (
        f"{path}: {type(actual)} != {type(expected)}"
    )
    if isinstance(expected, torch.Tensor):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, path
        assert torch.equal(actual, expected) or torch.allclose(actual, expected, equal_nan=True), path
    elif isinstance(expected, np.ndarray):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, path
        np.testing.assert_array_equal(actual, expected, err_msg=path)
    elif isinstance(expected, np.generic):
        assert actual.dtype == expected.dtype and actual.tobytes() == expected.tobytes(), path
    elif isinstance(expected, dict):
        assert list(actual) == list(expected), path
        for key in expected:
            assert_same(actual[key], expected[key], f"{path}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), path
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{path}[{i}]")
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(actual), path
    else:
        assert actual == expected, path
        if isinstance(expected, float):
            assert math.copysign(1.0, actual) == math.copysign(1.0, expected), path


def rich_state() -> dict:
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    return {
        "ints": [0, -1, 2**53 - 1, 2**53, -(2**70), 2**200],
        "floats": [0.1, -0.0, 1e308, float("nan"), float("inf"), float("-inf")],
        "misc": (True, False, None, "héllo", ("nested", (1,))),
        "np_scalars": [np.float32(1.5), np.int64(-7), np.bool_(True), np.uint8(255), np.float64("nan")],
        "arrays": {
            "transposed": np.arange(6, dtype=np.float32).reshape(2, 3).T,
            "mt_key": np.arange(624, dtype=np.uint32) * np.uint32(6_700_417),
            "zero_d": np.array(3.25),
            "empty": np.zeros((0, 4), dtype=np.int16),
            "text": np.array(["ab", "xyz"]),
        },
        "tensors": {
            "bf16": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
            "bool": torch.tensor([True, False]),
            "scalar": torch.tensor(7, dtype=torch.int64),
            "base": base,
            "column_view": base[:, 1],
            "transposed_view": base.t(),
            "nan": torch.tensor([float("nan"), 1.0]),
        },
        "int_keys": {0: "a", 5: {"deep": 1}},
        "tag_like_key": {"__tensor__": "not a reference", "__tuple__": [1]},
        "empty": {},
    }


def test_flatten_round_trip_keeps_every_type_and_value():
    state = rich_state()
    tree, tensors = flatten_state(state)
    text = json.dumps(tree, allow_nan=False)  # the tree is strict JSON (no NaN/Infinity tokens)
    assert all(t.is_contiguous() for t in tensors.values())
    # ints beyond 2**53 are tagged so that any JSON reader (not only Python's) keeps them exact
    assert tree["ints"][2] == 2**53 - 1 and tree["ints"][3] == {"__int__": hex(2**53)}
    assert tree["ints"][5] == {"__int__": hex(2**200)}
    assert tree["arrays"]["mt_key"] == {"__ndarray__": "arrays/mt_key", "dtype": "<u4", "shape": [624]}
    assert tree["misc"]["__tuple__"][4] == {"__tuple__": ["nested", {"__tuple__": [1]}]}
    assert_same(unflatten_state(json.loads(text), tensors), state)


def test_tensor_keys_follow_the_tree_path_and_stay_unique():
    first, second = torch.zeros(1), torch.ones(1)
    tree, tensors = flatten_state({"model": {"w": first}, "a/b": first, "a": {"b": second}})
    assert "model/w" in tensors
    assert len(tensors) == 3
    restored = unflatten_state(tree, tensors)
    assert restored["a/b"].item() == 0.0 and restored["a"]["b"].item() == 1.0


@pytest.mark.parametrize(
    ("state", "where"),
    [
        ({"a": [1, object()]}, "state['a'][1]"),
        ({"s": {1, 2}}, "state['s']"),
        ({"d": {1.5: "x"}}, "state['d'][1.5]"),
        ({"p": collections.namedtuple("P", "x")(1)}, "state['p']"),
        ({"o": np.array([object()])}, "state['o']"),
        ({"c": torch.tensor([1 + 2j])}, "state['c']"),
    ],
)
def test_unsupported_values_raise_type_error_naming_the_path(state, where):
    with pytest.raises(TypeError, match=re.escape(where)):
        flatten_state(state)


def test_reference_cycle_is_refused():
    state: dict = {"a": []}
    state["a"].append(state)
    with pytest.raises(TypeError, match="cycle"):
        flatten_state(state)


def test_saved_views_are_independent_copies(tmp_path):
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    folder = save_checkpoint(tmp_path, 1, {"base": base, "col": base[:, 1], "t": base.t()})
    loaded = load_checkpoint(folder)
    assert torch.equal(loaded["col"], torch.tensor([1.0, 5.0, 9.0]))
    assert torch.equal(loaded["t"], base.t())
    loaded["base"].zero_()
    assert loaded["col"].sum().item() == 15.0


def test_save_writes_folder_manifest_and_latest(tmp_path):
    folder = save_checkpoint(tmp_path / "ckpts", 1024, rich_state())
    assert folder == tmp_path / "ckpts" / "ckpt-000000001024"
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json", "state.json", "tensors.safetensors"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert (manifest["format"], manifest["version"], manifest["step"]) == ("wanderlust-checkpoint", 1, 1024)
    for name in ("tensors.safetensors", "state.json"):
        assert manifest["files"][name]["sha256"] == hashlib.sha256((folder / name).read_bytes()).hexdigest()
    assert manifest["created_unix"] > 0
    assert (tmp_path / "ckpts" / "latest").read_text().strip() == "ckpt-000000001024"
    json.loads((folder / "state.json").read_text(), parse_constant=lambda token: pytest.fail(token))
    loaded = read_checkpoint(tmp_path / "ckpts")
    assert (loaded.path, loaded.step) == (folder, 1024)
    assert_same(loaded.state, rich_state())


def test_module_state_dict_round_trip(tmp_path):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten())
    net(torch.randn(2, 1, 5, 5))  # updates BatchNorm running stats
    save_checkpoint(tmp_path, 1, {"net": net.state_dict()})
    fresh = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten())
    fresh.load_state_dict(load_checkpoint(tmp_path)["net"])
    x = torch.randn(3, 1, 5, 5)
    net.eval(), fresh.eval()
    assert torch.equal(net(x), fresh(x))


def _train(model, optimizer, steps, seed):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(8, 4, generator=generator)
        loss = (model(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def test_adam_resume_matches_uninterrupted_training(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    _train(model, optimizer, 3, seed=1)
    save_checkpoint(tmp_path, 3, {"model": model.state_dict(), "optimizer": optimizer.state_dict()})
    _train(model, optimizer, 3, seed=2)

    resumed = torch.nn.Linear(4, 1)
    resumed_optimizer = torch.optim.Adam(resumed.parameters(), lr=0.5)  # lr comes from the checkpoint
    state = load_checkpoint(tmp_path)
    resumed.load_state_dict(state["model"])
    resumed_optimizer.load_state_dict(state["optimizer"])
    assert resumed_optimizer.param_groups[0]["lr"] == 0.01
    _train(resumed, resumed_optimizer, 3, seed=2)
    for original, restored in zip(model.parameters(), resumed.parameters()):
        assert torch.equal(original, restored)


def test_normalizer_and_novelty_like_states_round_trip(tmp_path):
    rms = RunningMeanStd((3,))
    rms.update(torch.randn(10, 3))
    returns = DiscountedReturnNormalizer(num_envs=2, gamma=0.99)
    returns.normalize(torch.rand(5, 2))
    predictor = torch.nn.Linear(3, 2)
    adam = torch.optim.Adam(predictor.parameters())
    predictor(torch.randn(1, 3)).sum().backward()
    adam.step()
    memory_rng = np.random.default_rng(7)
    novelty = {
        "rnd": {"predictor": predictor.state_dict(), "optimizer": adam.state_dict(), "obs_rms": rms.state_dict()},
        "pixel": {"history": torch.randint(0, 255, (2, 4, 8, 8), dtype=torch.uint8), "filled": np.int64(3)},
        "episodic": {"memory": [torch.randn(5, 4), torch.randn(0, 4)], "rng": memory_rng.bit_generator.state},
    }
    save_checkpoint(tmp_path, 1, {"novelty": novelty, "returns": returns.state_dict()})
    loaded = load_checkpoint(tmp_path)
    assert_same(loaded["novelty"], novelty)

    rms_copy = RunningMeanStd((3,))
    rms_copy.load_state_dict(loaded["novelty"]["rnd"]["obs_rms"])
    assert torch.equal(rms_copy.mean, rms.mean) and rms_copy.count == rms.count
    returns_copy = DiscountedReturnNormalizer(num_envs=2, gamma=0.99)
    returns_copy.load_state_dict(loaded["returns"])
    rewards = torch.rand(4, 2)
    assert torch.equal(returns_copy.normalize(rewards), returns.normalize(rewards))
    rng_copy = np.random.default_rng()
    rng_copy.bit_generator.state = loaded["novelty"]["episodic"]["rng"]
    assert np.array_equal(rng_copy.integers(0, 2**62, 5), memory_rng.integers(0, 2**62, 5))


def test_failed_rename_leaves_previous_checkpoint_loadable(tmp_path, monkeypatch):
    save_checkpoint(tmp_path, 1, {"x": torch.tensor([1.0])})

    def broken_rename(src, dst):
        raise OSError("simulated crash")

    monkeypatch.setattr(os, "rename", broken_rename)
    with pytest.raises(OSError, match="simulated crash"):
        save_checkpoint(tmp_path, 2, {"x": torch.tensor([2.0])})
    monkeypatch.undo()
    assert [p.name for p in list_checkpoints(tmp_path)] == ["ckpt-000000000001"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert (tmp_path / "latest").read_text().strip() == "ckpt-000000000001"
    assert load_checkpoint(tmp_path)["x"].item() == 1.0


def test_crash_before_latest_update_keeps_the_committed_checkpoint(tmp_path, monkeypatch):
    save_checkpoint(tmp_path, 1, {"x": 1})

    def broken_write(path, text):
        raise OSError("simulated crash")

    monkeypatch.setattr(ckpt_module, "atomic_write_text", broken_write)
    with pytest.raises(OSError):
        save_checkpoint(tmp_path, 2, {"x": 2})
    monkeypatch.undo()
    assert load_checkpoint(tmp_path)["x"] == 1  # `latest` still names step 1
    # a half-written temp folder from a killed writer is never picked up, and the next save removes it
    stale = tmp_path / ".tmp-ckpt-killed"
    stale.mkdir()
    (stale / "tensors.safetensors").write_bytes(b"partial")
    assert load_checkpoint(tmp_path)["x"] == 1
    save_checkpoint(tmp_path, 3, {"x": 3})
    assert not stale.exists()
    assert load_checkpoint(tmp_path)["x"] == 3


def _flip_byte(path: Path, offset: int = -5) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corrupt_latest_raises_and_directory_falls_back(tmp_path):
    save_checkpoint(tmp_path, 1, {"w": torch.ones(4)})
    newest = save_checkpoint(tmp_path, 2, {"w": torch.full((4,), 2.0)})
    _flip_byte(newest / "tensors.safetensors")
    with pytest.raises(CheckpointError, match="tensors.safetensors checksum mismatch.*delete it or pass an older one"):
        load_checkpoint(newest)
    with pytest.warns(UserWarning, match="ckpt-000000000002 is corrupt"):
        loaded = read_checkpoint(tmp_path)
    assert loaded.step == 1 and torch.equal(loaded.state["w"], torch.ones(4))
    _flip_byte(tmp_path / "ckpt-000000000001" / "state.json", offset=3)
    with pytest.raises(CheckpointError, match="no valid checkpoint"):
        load_checkpoint(tmp_path)


def _evil_pickle(marker: Path) -> bytes:
    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    return pickle.dumps(Evil())


@pytest.mark.parametrize("fix_checksum", [False, True])
def test_pickle_named_safetensors_is_rejected_without_running(tmp_path, fix_checksum):
    sanity = tmp_path / "sanity"
    pickle.loads(_evil_pickle(sanity))  # the payload is live: unpickling it creates a file
    assert sanity.exists()
    folder = save_checkpoint(tmp_path / "ckpts", 1, {"w": torch.ones(2)})
    marker = tmp_path / "pwned"
    (folder / "tensors.safetensors").write_bytes(_evil_pickle(marker))
    if fix_checksum:
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["files"]["tensors.safetensors"]["sha256"] = hashlib.sha256(
            (folder / "tensors.safetensors").read_bytes()
        ).hexdigest()
        (folder / "manifest.json").write_text(json.dumps(manifest))
    reason = "not a valid safetensors file" if fix_checksum else "checksum mismatch"
    with pytest.raises(CheckpointError, match=reason):
        load_checkpoint(folder)
    assert not marker.exists()


def test_state_json_pointing_at_a_missing_tensor_is_corrupt(tmp_path):
    folder = save_checkpoint(tmp_path, 1, {"w": torch.ones(2)})
    (folder / "state.json").write_text(json.dumps({"w": {"__tensor__": "nope"}}))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"]["state.json"]["sha256"] = hashlib.sha256((folder / "state.json").read_bytes()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="state.json.*'nope'"):
        load_checkpoint(folder)


def test_foreign_missing_and_future_folders_give_clear_errors(tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "model.bin").write_bytes(b"\x00")
    with pytest.raises(CheckpointError, match="is not a wanderlust checkpoint"):
        load_checkpoint(foreign)
    nameless = tmp_path / "ckpt-000000000001"
    nameless.mkdir()
    with pytest.raises(CheckpointError, match=r"not a wanderlust checkpoint \(no manifest.json\)"):
        load_checkpoint(nameless)
    (nameless / "manifest.json").write_text(json.dumps({"format": "other-tool", "version": 1}))
    with pytest.raises(CheckpointError, match="not a wanderlust checkpoint"):
        load_checkpoint(nameless)
    (nameless / "manifest.json").write_text(json.dumps({"format": "wanderlust-checkpoint", "version": 2}))
    with pytest.raises(CheckpointError, match="version 2"):
        load_checkpoint(nameless)
    empty = tmp_path / "empty"
    empty.mkdir()
    for path in (empty, tmp_path / "missing"):
        with pytest.raises(CheckpointError, match="no checkpoint found.*train first or check the path"):
            load_checkpoint(path)


def test_pruning_keeps_newest_and_the_one_just_written(tmp_path):
    for step in range(1, 6):
        save_checkpoint(tmp_path, step, {"step": step}, keep=2)
    assert [checkpoint_step(p) for p in list_checkpoints(tmp_path)] == [4, 5]
    save_checkpoint(tmp_path, 3, {"step": 3}, keep=2)  # e.g. resumed from an older branch
    assert [checkpoint_step(p) for p in list_checkpoints(tmp_path)] == [3, 4, 5]
    assert load_checkpoint(tmp_path)["step"] == 3  # `latest` names the one just written
    for step in (6, 7):
        save_checkpoint(tmp_path, step, {"step": step}, keep=None)
    assert len(list_checkpoints(tmp_path)) == 5
    with pytest.raises(ValueError, match="keep"):
        save_checkpoint(tmp_path, 8, {}, keep=0)


def test_same_step_is_replaced_and_run_folder_is_accepted(tmp_path):
    checkpoints = tmp_path / "run" / "checkpoints"
    save_checkpoint(checkpoints, 3, {"v": "old"})
    save_checkpoint(checkpoints, 3, {"v": "new"})
    assert load_checkpoint(tmp_path / "run")["v"] == "new"
    assert [p.name for p in checkpoints.iterdir()] and all(not p.name.startswith(".") for p in checkpoints.iterdir())


def test_dangling_latest_warns_and_uses_newest(tmp_path):
    save_checkpoint(tmp_path, 1, {"v": 1})
    save_checkpoint(tmp_path, 2, {"v": 2})
    (tmp_path / "latest").write_text("ckpt-000000000009\n")
    with pytest.warns(UserWarning, match="not a checkpoint here"):
        assert load_checkpoint(tmp_path)["v"] == 2


def test_bad_save_arguments(tmp_path):
    with pytest.raises(ValueError, match="step"):
        save_checkpoint(tmp_path, -1, {})
    with pytest.raises(TypeError, match="must be a dict"):
        save_checkpoint(tmp_path, 1, [1])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"state\['bad'\]"):
        save_checkpoint(tmp_path, 1, {"bad": object()})
    assert list(tmp_path.iterdir()) == []  # nothing written on a bad state


def _draw() -> tuple:
    return random.random(), np.random.standard_normal(3).tolist(), torch.rand(3).tolist()


def test_rng_state_round_trips_through_a_checkpoint(tmp_path):
    seed_everything(123)
    np.random.standard_normal()  # leaves a cached gaussian in the legacy state
    state = capture_rng_state()
    expected = _draw()
    save_checkpoint(tmp_path, 1, {"rng": state})
    seed_everything(999)
    assert _draw() != expected
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        restore_rng_state(load_checkpoint(tmp_path)["rng"])
    assert _draw() == expected


def test_seed_everything_is_reproducible_and_validates():
    seed_everything(5)
    first = _draw()
    seed_everything(5)
    assert _draw() == first
    with pytest.raises(ValueError, match="seed"):
        seed_everything(-1)
    with pytest.raises(ValueError, match="capture_rng_state"):
        restore_rng_state({"python": random.getstate()})
