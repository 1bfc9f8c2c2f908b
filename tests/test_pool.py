"""Worker pools without Ray: shares and seeds, rollout merging, the learner-side storage fill,
restarts, the serial twin vs subprocesses, config and CLI."""

from __future__ import annotations

import json
import os
import signal
import warnings

import numpy as np
import pytest
import torch

from tests.conftest import COUNT_ENV_ID
from wanderlust.algo.pool import LocalPool, WorkerLost, collect_with_restarts, last_line, make_pool, overhead_ms
from wanderlust.algo.rollout import Rollout, merge_rollouts, produced_observations, store_rollout
from wanderlust.algo.storage import RolloutStorage
from wanderlust.algo.trainer import Learner, collect_rollout, train
from wanderlust.algo.worker import (
    RolloutWorker, WorkerSpec, env_reset_seed, policy_seed, policy_weights, worker_shares,
)
from wanderlust.cli import build_parser, config_from_args
from wanderlust.envs.factory import make_vector_env
from wanderlust.runtime.checkpoint import checkpoint_name, load_checkpoint


def _rollout(obs, last_obs, terminated, truncated, final_obs, seconds=0.0) -> Rollout:
    """A rollout whose frames are scalars ``[T, n, 1]``; actions and rewards are filler."""
    T, n = terminated.shape
    return Rollout(
        obs=np.asarray(obs, np.uint8)[..., None], last_obs=np.asarray(last_obs, np.uint8)[..., None],
        final_obs=np.asarray(final_obs, np.uint8).reshape(-1, 1), actions=np.zeros((T, n), np.int64),
        env_actions=np.zeros((T, n), np.int64), log_probs=np.zeros((T, n), np.float32),
        rewards=np.zeros((T, n), np.float32), terminated=np.asarray(terminated), truncated=np.asarray(truncated),
        episode_returns=[], episode_lengths=[], episode_coverages=[], seconds=seconds,
    )


# ---- shares and seeds ----

@pytest.mark.parametrize("num_envs, workers, expected", [
    (8, 3, [(0, 3), (3, 3), (6, 2)]), (4, 4, [(0, 1), (1, 1), (2, 1), (3, 1)]), (5, 1, [(0, 5)]),
])
def test_envs_are_split_as_evenly_as_possible(num_envs, workers, expected):
    assert worker_shares(num_envs, workers) == expected


def test_more_workers_than_envs_is_refused():
    with pytest.raises(ValueError, match="1 <= workers <= num_envs"):
        worker_shares(2, 3)


def test_first_workers_seed_envs_like_the_in_process_runner_and_replacements_do_not_replay_them():
    # In-process: env i is reset with seed + 7919 * updates + i. Worker with offset 3 -> its env 0 is env 3.
    spec = WorkerSpec(index=1, env_offset=3, num_envs=2, generation=0, start_update=2)
    assert env_reset_seed(10, spec) == 10 + 7919 * 2 + 3
    replacement = spec.replacement(start_update=5)
    assert (replacement.generation, replacement.start_update, replacement.env_offset) == (1, 5, 3)
    assert env_reset_seed(10, replacement) == 10 + 7919 * 5 + 3 + 1_000_003
    seeds = {policy_seed(10, s) for s in (spec, replacement, WorkerSpec(0, 0, 3, 0, 2))}
    assert len(seeds) == 3  # independent sampling streams per worker and generation


# ---- rollouts: produced frames and merging ----

def test_produced_frames_are_the_next_obs_except_final_frames_at_episode_ends():
    # one env, T = 4: the episode ends at t=1 (final frame 9, reset frame 20) and at t=3 (final frame 8).
    rollout = _rollout(obs=[[1], [2], [20], [21]], last_obs=[30], terminated=np.array([[False], [True], [False], [False]]),
                       truncated=np.array([[False], [False], [False], [True]]), final_obs=[9, 8])
    assert produced_observations(rollout)[:, 0, 0].tolist() == [2, 9, 21, 8]


def test_a_rollout_with_missing_final_frames_is_refused():
    rollout = _rollout(obs=[[1], [2]], last_obs=[3], terminated=np.array([[True], [True]]),
                       truncated=np.zeros((2, 1), bool), final_obs=[9])
    with pytest.raises(ValueError, match="2 episode ends but 1 final"):
        produced_observations(rollout)


def test_merging_interleaves_the_final_frames_of_the_workers_in_time_order():
    # worker A (1 env): ends at t=1 (final 101); worker B (2 envs): ends at t=0 env 1 (final 200), t=1 env 0 (final 201).
    a = _rollout(obs=[[1], [2]], last_obs=[3], terminated=np.array([[False], [True]]), truncated=np.zeros((2, 1), bool),
                 final_obs=[101], seconds=1.0)
    b = _rollout(obs=[[10, 20], [11, 50]], last_obs=[12, 51], terminated=np.array([[False, True], [True, False]]),
                 truncated=np.zeros((2, 2), bool), final_obs=[200, 201], seconds=2.0)
    merged = merge_rollouts([a, b])
    assert merged.obs.shape == (2, 3, 1) and merged.last_obs[:, 0].tolist() == [3, 12, 51]
    # row-major over (t, global env): (0, 2) -> 200, (1, 0) -> 101, (1, 1) -> 201
    assert merged.final_obs[:, 0].tolist() == [200, 101, 201]
    expected = np.concatenate([produced_observations(a), produced_observations(b)], axis=1)
    assert np.array_equal(produced_observations(merged), expected)
    assert merged.seconds == 2.0


def test_errors_are_summarised_by_their_last_line():
    traceback_text = "Traceback (most recent call last):\n  File 'x.py', line 1\nRuntimeError: the game crashed\n\n"
    assert last_line(WorkerLost(traceback_text)) == "RuntimeError: the game crashed"
    assert last_line(WorkerLost("x" * 500), limit=20) == "x" * 17 + "..."
    assert last_line(WorkerLost("")) == "WorkerLost"


def test_overhead_is_the_collect_time_not_spent_inside_workers():
    assert overhead_ms(0.5, [0.3, 0.4], serial=False) == pytest.approx(100.0)
    assert overhead_ms(0.8, [0.3, 0.4], serial=True) == pytest.approx(100.0)
    assert overhead_ms(0.1, [0.3], serial=False) == 0.0


# ---- the learner side: same transitions as in-process collection ----

def test_pool_rollouts_store_the_same_transitions_as_in_process_collection(tiny):
    """Count env: frames do not depend on actions, so a worker with the same env seeds sees exactly the
    frames, rewards and episode ends of the in-process runner; values come from the learner afterwards."""
    config = tiny(env__env_id=COUNT_ENV_ID, env__frame_stack=1, env__num_envs=2, ppo__num_steps=8, novelty_name="none",
                  normalize_intrinsic=False, workers=1)
    envs = make_vector_env(config.env)
    learner = Learner(config, envs.single_observation_space, envs.single_action_space, torch.device("cpu"))
    shape, space = envs.single_observation_space.shape, envs.single_action_space
    direct = RolloutStorage(8, 2, shape, space, torch.device("cpu"))
    next_obs, _ = collect_rollout(envs, learner, direct, envs.reset(seed=config.seed)[0])
    envs.close()

    worker = RolloutWorker(config, WorkerSpec(0, 0, 2))
    rollout = worker.collect(policy_weights(learner.agent), 8)
    worker.close()
    pooled = RolloutStorage(8, 2, shape, space, torch.device("cpu"))
    pool_next_obs = store_rollout(learner.agent, pooled, rollout, config.ppo.gamma)
    for name in ("obs", "next_obs", "episode_ends"):
        assert torch.equal(getattr(pooled, name), getattr(direct, name)), name
    assert np.array_equal(pool_next_obs, next_obs)
    assert torch.allclose(pooled.rewards_ext, direct.rewards_ext, atol=1e-6)  # bootstrap values, batched differently
    assert torch.allclose(pooled.values_ext, direct.values_ext, atol=1e-6)
    assert pooled.episode_ends.any()
    # the stored log-probs are the behaviour policy's: re-evaluating the stored actions gives them back
    evaluated = learner.agent.evaluate(pooled.flat(pooled.obs), pooled.flat(pooled.actions)).log_prob
    assert torch.allclose(evaluated, pooled.flat(pooled.log_probs), atol=1e-6)


def test_a_worker_leaves_the_callers_random_stream_alone(tiny):
    config = tiny(workers=1, env__num_envs=1)
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    worker = RolloutWorker(config, WorkerSpec(0, 0, 1))
    worker.collect(policy_weights(worker.agent), 4)
    worker.close()
    assert torch.equal(torch.rand(3), expected)


# ---- restarts ----

def test_a_failed_worker_is_replaced_and_its_share_collected_again():
    attempts, replaced = {0: 0, 1: 0}, []

    def wait(index):
        attempts[index] += 1
        if index == 1 and attempts[1] == 1:
            raise WorkerLost("env crashed")
        return f"rollout {index} try {attempts[index]}"

    result = collect_with_restarts(2, submit=lambda i: i, wait=wait, replace=lambda i, e: replaced.append((i, str(e))))
    assert result == ["rollout 0 try 1", "rollout 1 try 2"]
    assert replaced == [(1, "env crashed")]


def test_a_worker_that_keeps_failing_ends_the_run_with_its_error():
    def wait(index):
        raise WorkerLost("ImportError: no module named wanderlust")

    with pytest.raises(RuntimeError, match="worker 0 failed 3 times in a row.*no module named wanderlust"):
        collect_with_restarts(1, submit=lambda i: i, wait=wait, replace=lambda i, e: None, serial=True)


def test_serial_pool_replaces_a_worker_whose_env_crashes(tiny):
    config = tiny(workers=2, serial_workers=True)
    pool = LocalPool(config)
    try:
        broken = pool._workers[1].worker.envs

        def crash(action):
            raise RuntimeError("the game crashed")

        broken.step = crash
        with pytest.warns(RuntimeWarning, match="rollout worker 1 lost .*the game crashed"):
            rollout = pool.collect(policy_weights(pool._workers[0].worker.agent), 4)
        assert rollout.obs.shape[:2] == (4, 2) and pool.restarts == 1
        assert pool.specs[1].generation == 1 and pool.specs[0].generation == 0
    finally:
        pool.close()


# ---- subprocess workers vs the serial twin ----

def test_subprocess_workers_train_exactly_like_the_serial_twin_and_survive_a_killed_worker(tmp_path, tiny):
    serial_dir, process_dir = tmp_path / "serial", tmp_path / "processes"
    train(tiny(workers=2, serial_workers=True, total_steps=96), serial_dir, show_progress=False)
    killed = []
    pools = []

    def factory(config, start_update):
        pools.append(make_pool(config, start_update))
        return pools[-1]

    def kill_after_last_update(learner, metrics):
        if learner.updates == 2:  # the checkpoints compared below are already taken: kill, then train on
            killed.append(pools[0].worker_pids()[0])
            os.kill(killed[0], signal.SIGKILL)
        if learner.updates == 3:
            killed.append(pools[0].worker_pids())

    config = tiny(workers=2, total_steps=96)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = train(config, process_dir, show_progress=False, on_update=kill_after_last_update, pool_factory=factory)
    assert result.updates == 3 and not result.interrupted
    serial, processes = (load_checkpoint(d / "checkpoints" / checkpoint_name(64)) for d in (serial_dir, process_dir))
    for name, tensor in serial["agent"].items():
        assert torch.equal(tensor, processes["agent"][name]), name
    for name, tensor in serial["novelty"].items():
        if isinstance(tensor, torch.Tensor):
            assert torch.equal(tensor, processes["novelty"][name]), name
    lines = [json.loads(line) for line in (process_dir / "metrics.jsonl").read_text().splitlines()]
    assert [line["charts/worker_restarts"] for line in lines] == [0.0, 0.0, 1.0]
    assert any("rollout worker 0 lost" in str(w.message) for w in caught)
    assert killed[0] not in killed[1] and len(killed[1]) == 2  # a new process took the killed one's place


# ---- config and command line ----

@pytest.mark.parametrize("changes, message", [
    ({"workers": -1}, "workers must be an integer >= 0"),
    ({"workers": 3}, "--workers 3 is more than --num-envs 2"),
    ({"ray_address": "local"}, "--ray needs --workers"),
    ({"workers": 2, "ray_address": "http://head:6379"}, "--ray must be 'local' or HOST:PORT"),
    ({"workers": 2, "ray_address": "head"}, "--ray must be 'local' or HOST:PORT"),
    ({"workers": 2, "ray_address": "10.0.0.5:6379", "ray_dashboard": True}, "use it with --ray local"),
])
def test_bad_worker_settings_are_refused_in_one_line(tiny, changes, message):
    config = tiny(**changes)
    with pytest.raises(ValueError, match=message):
        config.validate()


def test_good_worker_settings_pass(tiny):
    for changes in ({"workers": 2}, {"workers": 1, "ray_address": "local", "ray_dashboard": True},
                    {"workers": 2, "ray_address": "10.0.0.5:6379"}, {"workers": 2, "ray_address": "[fd00::2]:6379"}):
        tiny(**changes).validate()


def test_cli_sets_workers_and_ray():
    args = build_parser().parse_args(["train", "--num-envs", "4", "--workers", "2", "--ray", "local", "--ray-dashboard"])
    config = config_from_args(args)
    assert (config.workers, config.ray_address, config.ray_dashboard) == (2, "local", True)
    plain = config_from_args(build_parser().parse_args(["train"]))
    assert (plain.workers, plain.ray_address, plain.ray_dashboard) == (0, None, False)


def test_cli_trains_with_serial_workers_and_records_them(tmp_path):
    from wanderlust.cli import main

    run = tmp_path / "run"
    code = main(["train", "--preset", "quick", "--set", "env.maze_size=5", "--set", "env.maze_obs_size=40",
                 "--set", "env.frame_stack=2", "--num-steps", "16", "--no-progress", "--total-steps", "32",
                 "--workers", "2", "--set", "serial_workers=true", "--run-dir", str(run)])
    assert code == 0
    config = json.loads((run / "config.json").read_text())
    assert (config["workers"], config["serial_workers"], config["ray_address"]) == (2, True, None)
    line = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    assert line["charts/worker_restarts"] == 0.0 and line["charts/rollout_overhead_ms"] >= 0.0
