"""PerEnvMemory: push order, wrap-around eviction, mask, start-frame filling, clear, state_dict round trip."""

from __future__ import annotations

import pytest
import torch

from wanderlust.novelty.memory import PerEnvMemory, history_mask


def values(memory: PerEnvMemory) -> list[list[float]]:
    """Each env's filled slots (entry shape (1,)) as plain floats, slot order."""
    return [
        [float(entry) for entry, filled in zip(memory.entries[env, :, 0], memory.mask()[env]) if filled]
        for env in range(memory.num_envs)
    ]


def test_push_fills_slots_in_order_and_wraps_over_the_oldest():
    memory = PerEnvMemory(2, 3, (1,), "cpu")
    assert memory.entries.shape == (2, 3, 1) and memory.counts.tolist() == [0, 0]
    memory.push(torch.tensor([[1.0], [10.0]]))
    memory.push(torch.tensor([[2.0], [20.0]]))
    assert values(memory) == [[1.0, 2.0], [10.0, 20.0]]
    memory.push(torch.tensor([[3.0], [30.0]]))
    memory.push(torch.tensor([[4.0], [40.0]]))  # slot 0 (oldest) overwritten
    assert values(memory) == [[4.0, 2.0, 3.0], [40.0, 20.0, 30.0]]
    memory.push(torch.tensor([[5.0], [50.0]]))  # then slot 1
    assert values(memory) == [[4.0, 5.0, 3.0], [40.0, 50.0, 30.0]]
    assert memory.counts.tolist() == [5, 5]


def test_push_where_appends_only_for_the_chosen_envs():
    memory = PerEnvMemory(3, 2, (1,), "cpu")
    memory.push(torch.tensor([[1.0], [10.0], [100.0]]), where=torch.tensor([True, False, True]))
    memory.push(torch.tensor([[2.0], [20.0], [200.0]]), where=torch.tensor([False, True, True]))
    assert values(memory) == [[1.0], [20.0], [100.0, 200.0]]
    assert memory.counts.tolist() == [1, 1, 2]
    memory.push(torch.tensor([[3.0], [30.0], [300.0]]), where=torch.tensor([False, False, True]))
    assert values(memory) == [[1.0], [20.0], [300.0, 200.0]]  # env 2 wrapped over its oldest


def test_history_mask_marks_filled_slots_up_to_capacity():
    assert history_mask(torch.tensor([0, 1, 3, 9]), 3).tolist() == [
        [False, False, False], [True, False, False], [True, True, True], [True, True, True]]


def test_fill_empty_seeds_only_empty_envs_with_the_encoded_start():
    memory = PerEnvMemory(3, 2, (1,), "cpu")
    memory.push(torch.tensor([[7.0], [8.0], [9.0]]))
    memory.clear(torch.tensor([True, False, True]))
    calls = []

    def encode(start: torch.Tensor) -> torch.Tensor:
        calls.append(start.clone())
        return start * 2

    memory.fill_empty(torch.tensor([[1.0], [2.0], [3.0]]), encode)
    assert len(calls) == 1 and calls[0].tolist() == [[1.0], [3.0]]  # only the empty envs are encoded
    assert memory.counts.tolist() == [1, 1, 1]
    assert values(memory) == [[2.0], [8.0], [6.0]]
    memory.fill_empty(torch.tensor([[5.0], [5.0], [5.0]]), encode)  # none empty: encode not called
    assert len(calls) == 1 and values(memory) == [[2.0], [8.0], [6.0]]


def test_clear_empties_only_the_given_envs_and_the_next_push_starts_at_slot_0():
    memory = PerEnvMemory(2, 3, (1,), "cpu")
    for value in (1.0, 2.0):
        memory.push(torch.tensor([[value], [value * 10]]))
    memory.clear(torch.tensor([False, True]))
    assert memory.counts.tolist() == [2, 0]
    assert memory.mask().tolist() == [[True, True, False], [False, False, False]]
    memory.push(torch.tensor([[3.0], [99.0]]))
    assert values(memory) == [[1.0, 2.0, 3.0], [99.0]]


def test_entries_keep_the_memory_dtype_and_multi_dim_shape():
    memory = PerEnvMemory(1, 2, (2, 2), "cpu")
    memory.push(torch.full((1, 2, 2), 200, dtype=torch.uint8))
    assert memory.entries.dtype == torch.float32 and memory.entries[0, 0].tolist() == [[200.0, 200.0]] * 2


def test_state_dict_round_trip_restores_entries_and_counts():
    memory = PerEnvMemory(2, 2, (3,), "cpu", saved_dtype=torch.uint8)
    for value in (10.0, 20.0, 30.0):
        memory.push(torch.full((2, 3), value))
    memory.clear(torch.tensor([False, True]))
    state = memory.state_dict()
    assert state["entries"].dtype == torch.uint8 and state["counts"].tolist() == [3, 0]
    restored = PerEnvMemory(2, 2, (3,), "cpu", saved_dtype=torch.uint8)
    restored.load_state_dict(state)
    assert restored.entries.dtype == torch.float32
    assert torch.equal(restored.entries, memory.entries) and torch.equal(restored.counts, memory.counts)
    state["counts"][0] = 0  # the restored memory is a copy, not a view of the state
    assert restored.counts.tolist() == [3, 0]
    for target in (memory, restored):
        target.push(torch.full((2, 3), 40.0))
    assert torch.equal(restored.entries, memory.entries) and restored.counts.tolist() == [4, 1]


def test_bad_sizes_raise_clear_errors():
    with pytest.raises(ValueError, match="num_envs"):
        PerEnvMemory(0, 3, (1,), "cpu")
    with pytest.raises(ValueError, match="capacity"):
        PerEnvMemory(1, 0, (1,), "cpu")
    memory = PerEnvMemory(2, 3, (1,), "cpu")
    with pytest.raises(ValueError, match="shape"):
        memory.load_state_dict(PerEnvMemory(2, 4, (1,), "cpu").state_dict())
