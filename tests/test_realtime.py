"""The real-time runner: actor rate under learning, dropped rollouts, behaviour log-probs, shutdown paths.

The live env is the built-in maze paced by :class:`ControlRate` at 60 Hz (40x40 frames, seed encoder).
"""

from __future__ import annotations

import copy

import json
import math
import os
import signal
import threading
import time

import gymnasium as gym
import pytest
import torch
from torch import nn

import wanderlust.algo.realtime as realtime
from wanderlust.algo.realtime import (
    ControlRate,
    learn_from_rollout,
    learner_threads,
    set_thread_torch_threads,
    train_realtime,
)
from wanderlust.algo.storage import RolloutStorage
from wanderlust.algo.trainer import Learner
from wanderlust.algo.weights import ActorRollout, RolloutQueue, WeightPublisher, is_late
from wanderlust.envs.factory import make_env
from wanderlust.envs.screen.errors import StopRequested
from wanderlust.runtime.checkpoint import list_checkpoints, load_checkpoint

HZ = 60.0


def _config(tiny, **changes):
    base = dict(env__num_envs=1, ppo__num_steps=32, ppo__num_minibatches=2, novelty_name="pixel",
                total_steps=10**6, checkpoint_every=10**6)
    return tiny(**{**base, **changes})


class Spy(gym.Wrapper):
    """Counts ``close`` calls and can raise from ``step`` number ``fail_at``."""

    def __init__(self, env: gym.Env, fail_at: int | None = None, error: BaseException | None = None) -> None:
        super().__init__(env)
        self.fail_at, self.steps, self.closed = fail_at, 0, 0
        self.error = error or RuntimeError("the game crashed")

    def step(self, action):
        self.steps += 1
        if self.steps == self.fail_at:
            raise self.error
        return self.env.step(action)

    def close(self):
        self.closed += 1
        return self.env.close()


def _live_env(config, fail_at=None, error=None) -> Spy:
    return Spy(ControlRate(make_env(config.env), HZ), fail_at, error)


def _lines(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


# ---- the small pieces ----

def test_a_step_is_late_when_it_overruns_the_period_by_more_than_the_tolerance():
    assert not is_late(0.100, 10.0)
    assert not is_late(0.109, 10.0)
    assert is_late(0.111, 10.0)
    assert is_late(1 / 30 * 1.2, 30.0) and not is_late(1 / 30 * 1.05, 30.0)


class _TimedEnv(gym.Env):
    """Each step advances a fake clock by the next of ``durations``."""

    observation_space = gym.spaces.Box(0, 255, (1, 1, 1), "uint8")
    action_space = gym.spaces.Discrete(2)

    def __init__(self, clock: list[float], durations: list[float]) -> None:
        self.clock, self.durations = clock, list(durations)

    def reset(self, *, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        self.clock[0] += self.durations.pop(0)
        return self.observation_space.sample(), 0.0, False, False, {}


def test_control_rate_returns_on_the_tick_grid_and_restarts_it_after_a_late_step():
    clock, sleeps = [0.0], []

    def sleep(seconds):
        sleeps.append(seconds)
        clock[0] += seconds

    env = ControlRate(_TimedEnv(clock, [0.03, 0.15, 0.01, 0.35, 0.0]), 10.0, clock=lambda: clock[0], sleep=sleep)
    assert env.metadata["render_fps"] == 10.0
    env.reset()
    returned, late = [], []
    for _ in range(5):
        *_, info = env.step(0)
        returned.append(clock[0])
        late.append(info["late"])
    # 0.1 on time; 0.25 late (the grid restarts there); 0.35; 0.7 late again; 0.8.
    assert returned == pytest.approx([0.1, 0.25, 0.35, 0.7, 0.8])
    assert late == [False, True, False, True, False]
    assert sum(sleeps) == pytest.approx(0.07 + 0.09 + 0.1)


def test_rollout_queue_never_blocks_and_drops_the_oldest_when_full():
    queue = RolloutQueue(2)
    assert [queue.put(item) for item in "abc"] == [False, False, True]
    assert queue.dropped == 1 and len(queue) == 2
    assert [queue.get(0.01), queue.get(0.01), queue.get(0.01)] == ["b", "c", None]
    with pytest.raises(ValueError, match="capacity"):
        RolloutQueue(0)


def test_weight_publisher_hands_over_a_snapshot_only_when_newer():
    source, target = nn.Linear(3, 2), nn.Linear(3, 2)
    publisher = WeightPublisher()
    assert publisher.pull(target, have=-1) == -1  # nothing published yet
    publisher.publish(source, version=1)
    published = source.weight.detach().clone()
    with torch.no_grad():
        source.weight.add_(1.0)  # the learner keeps training after publishing
    assert publisher.pull(target, have=-1) == 1
    assert torch.equal(target.weight, published)
    with torch.no_grad():
        target.weight.zero_()
    assert publisher.pull(target, have=1) == 1 and target.weight.abs().sum() == 0  # no copy when up to date
    with pytest.raises(ValueError, match="older"):
        publisher.publish(source, version=0)


def test_learner_threads_leave_one_core_to_the_actor(tiny, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert learner_threads(_config(tiny)) == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert learner_threads(_config(tiny)) == 1
    assert learner_threads(_config(tiny, torch_threads=5)) == 5


def test_torch_threads_are_set_per_os_thread():
    """The actor's 1 thread survives the learner setting another count afterwards (torch's lazy
    per-thread initialisation would otherwise copy the learner's value into the actor)."""
    actor_set, learner_set, seen = threading.Event(), threading.Event(), {}
    main_threads = torch.get_num_threads()

    def actor():
        set_thread_torch_threads(1)
        actor_set.set()
        learner_set.wait(5)
        torch.ones(64, 64) @ torch.ones(64, 64)  # a parallel op after the learner's call
        seen["actor"] = torch.get_num_threads()

    def learner():
        actor_set.wait(5)
        set_thread_torch_threads(3)
        learner_set.set()
        seen["learner"] = torch.get_num_threads()

    workers = [threading.Thread(target=actor), threading.Thread(target=learner)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert seen == {"actor": 1, "learner": 3}
    assert torch.get_num_threads() == main_threads  # the main thread's own count is untouched
    torch.set_num_threads(main_threads)  # and the default for new threads restored


def test_learn_from_rollout_keeps_behaviour_log_probs_and_uses_the_current_critic(tiny, monkeypatch):
    config = _config(tiny, ppo__num_steps=8, novelty_name="rnd", normalize_intrinsic=False)
    env = make_env(config.env)
    learner = Learner(config, env.observation_space, env.action_space, torch.device("cpu"))
    storage = RolloutStorage(8, 1, env.observation_space.shape, env.action_space, torch.device("cpu"))
    rollout = ActorRollout.empty(8, env.observation_space.shape, env.action_space)
    rollout.obs.copy_(torch.randint(0, 256, rollout.obs.shape, dtype=torch.uint8))
    rollout.next_obs.copy_(torch.randint(0, 256, rollout.next_obs.shape, dtype=torch.uint8))
    act = learner.agent.act(rollout.obs)
    rollout.actions.copy_(act.action)
    rollout.env_actions.copy_(act.env_action)
    rollout.log_probs.copy_(act.log_prob - 0.25)  # as if an older policy had acted
    rollout.rewards_ext.fill_(0.5)
    rollout.truncated[2], rollout.terminated[5] = True, True
    rollout.policy_versions.fill_(1)
    rollout.last_obs, rollout.end_step = rollout.next_obs[-1].clone(), 88
    learner.updates = 3
    values_ext, values_int = learner.agent.values(rollout.obs)
    final_value = learner.agent.values(rollout.next_obs[2:3])[0][0]
    seen = {}

    def capture(agent, optimizer, batch, ppo_config, generator):
        seen["batch"] = batch
        return {}

    monkeypatch.setattr(realtime, "ppo_update", capture)
    metrics = learn_from_rollout(learner, storage, rollout)
    batch = seen["batch"]
    assert torch.equal(batch.log_probs, rollout.log_probs)  # stored, not recomputed
    assert torch.allclose(batch.values_ext, values_ext) and torch.allclose(batch.values_int, values_int)
    assert storage.rewards_ext[2, 0].item() == pytest.approx(0.5 + config.ppo.gamma * final_value.item(), rel=1e-6)
    assert storage.rewards_ext[5, 0].item() == 0.5 and storage.rewards_ext[0, 0].item() == 0.5
    assert storage.episode_ends[:, 0].tolist() == [False, False, True, False, False, True, False, False]
    assert metrics["charts/policy_lag"] == 2.0
    assert (learner.updates, learner.global_step) == (4, 88)


# ---- the runner ----

def test_the_actor_holds_its_rate_while_the_learner_updates(tmp_path, tiny):
    config = _config(tiny)
    env = _live_env(config)
    start = time.perf_counter()
    result = train_realtime(config, env, tmp_path, show_progress=False, max_seconds=3.0)
    assert time.perf_counter() - start < 10.0
    assert result.updates >= 3 and not result.interrupted and result.stopped_by == "time"
    assert result.actor_hz == pytest.approx(HZ, rel=0.1)
    assert result.actor_steps == pytest.approx(HZ * 3.0, rel=0.2)
    lines = _lines(tmp_path)
    assert len(lines) == result.updates
    for line in lines:  # each rollout after the first was played while the learner trained
        assert line["charts/actor_hz"] == pytest.approx(HZ, rel=0.1)
        assert line["charts/policy_lag"] >= 0
        for name in ("charts/late_steps", "charts/dropped_rollouts", "charts/SPS", "losses/policy_loss",
                     "novelty/reward_raw_mean", "charts/learning_rate"):
            assert math.isfinite(line[name]), name
    assert [line["step"] for line in lines] == [32 * (i + 1) for i in range(len(lines))]  # nothing dropped
    assert load_checkpoint(tmp_path / "checkpoints")["updates"] == result.updates
    assert env.closed == 1


def test_a_slow_learner_does_not_slow_the_actor_and_rollouts_get_dropped(tmp_path, tiny, monkeypatch):
    real_update = realtime.ppo_update

    def slow_update(*args):
        time.sleep(0.7)
        return real_update(*args)

    monkeypatch.setattr(realtime, "ppo_update", slow_update)
    config = _config(tiny, ppo__num_steps=16)  # a rollout every 0.27 s, an update every 0.7+ s
    env = _live_env(config)
    result = train_realtime(config, env, tmp_path, show_progress=False, max_seconds=3.0)
    assert result.actor_hz == pytest.approx(HZ, rel=0.1)
    assert result.actor_steps >= 0.8 * HZ * 3.0
    assert result.dropped_rollouts >= 2
    finished = result.actor_steps // 16
    assert result.updates + result.dropped_rollouts <= finished <= result.updates + result.dropped_rollouts + 3
    assert _lines(tmp_path)[-1]["charts/dropped_rollouts"] >= 1
    assert env.closed == 1


def test_ppo_uses_the_actors_log_probs_and_every_policy_weight_gets_a_gradient(tmp_path, tiny, monkeypatch):
    """Also: the actor thread runs torch with 1 thread, the learner thread with learner_threads()."""
    handed_over, trained, grads, threads = {}, [], [], {"actor": set(), "learner": set()}
    real_put, real_update, real_record = RolloutQueue.put, realtime.ppo_update, ActorRollout.record
    main_threads = torch.get_num_threads()

    def record_step(rollout, *args):
        threads["actor"].add(torch.get_num_threads())
        return real_record(rollout, *args)

    def record_put(queue, rollout: ActorRollout):
        handed_over[rollout.end_step] = (rollout.obs.clone(), rollout.log_probs.clone())
        return real_put(queue, rollout)

    def record_update(agent, optimizer, batch, config, generator):
        trained.append((batch.obs.clone(), batch.log_probs.clone()))
        return real_update(agent, optimizer, batch, config, generator)

    def inspect(learner, metrics):
        threads["learner"].add(torch.get_num_threads())
        grads.append({n: None if p.grad is None else p.grad.clone() for n, p in learner.agent.named_parameters()})

    monkeypatch.setattr(RolloutQueue, "put", record_put)
    monkeypatch.setattr(realtime, "ppo_update", record_update)
    monkeypatch.setattr(ActorRollout, "record", record_step)
    config = _config(tiny, total_steps=64, novelty_name="rnd")
    result = train_realtime(config, _live_env(config), tmp_path, show_progress=False, on_update=inspect)
    assert threads == {"actor": {1}, "learner": {learner_threads(config)}}
    assert torch.get_num_threads() == main_threads
    assert result.global_step == 64 and result.updates + result.dropped_rollouts == 2 and result.updates >= 1
    assert result.stopped_by == "steps" and not result.interrupted
    assert len(trained) == result.updates
    for obs, log_probs in trained:
        match = [recorded for recorded_obs, recorded in handed_over.values() if torch.equal(recorded_obs, obs)]
        assert match, "trained on frames the actor never handed over"
        assert torch.equal(log_probs, match[0])  # the behaviour log-probs, not recomputed ones
    for name, grad in grads[0].items():
        assert grad is not None, f"{name} got no gradient"
        assert torch.isfinite(grad).all() and grad.abs().sum() > 0, f"{name} has an all-zero gradient"


@pytest.mark.parametrize("novelty", ["pixel", "rnd", "icm", "episodic", "none"])
def test_every_novelty_module_trains_on_actor_rollouts_across_episode_ends(tmp_path, tiny, novelty):
    config = _config(tiny, novelty_name=novelty, total_steps=32, env__max_episode_steps=20,
                     novelty__episodic__landmark_radius=0.5)  # untrained, 32 steps: pay for some landmarks
    env = _live_env(config)
    result = train_realtime(config, env, tmp_path, show_progress=False)
    assert (result.global_step, result.updates, result.actor_steps) == (32, 1, 32)
    [line] = _lines(tmp_path)
    assert math.isfinite(line["losses/policy_loss"]) and math.isfinite(line["losses/value_loss_int"])
    assert line["charts/episodic_length"] == 20 and 0 < line["charts/coverage"] <= 1  # the truncated episode
    if novelty != "none":
        assert line["novelty/reward_raw_mean"] > 0
    assert env.closed == 1


def test_an_env_exception_stops_both_threads_propagates_and_closes_the_env(tmp_path, tiny):
    config = _config(tiny)
    env = _live_env(config, fail_at=40)
    with pytest.raises(RuntimeError, match="the game crashed"):
        train_realtime(config, env, tmp_path, show_progress=False, max_seconds=20.0)
    assert env.closed == 1
    assert not list_checkpoints(tmp_path / "checkpoints")  # no checkpoint of a crashed run


def test_a_learner_exception_propagates_and_closes_the_env(tmp_path, tiny):
    def fail(learner, metrics):
        raise ValueError("bad metric")

    config = _config(tiny)
    env = _live_env(config)
    with pytest.raises(ValueError, match="bad metric"):
        train_realtime(config, env, tmp_path, show_progress=False, on_update=fail, max_seconds=20.0)
    assert env.closed == 1


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_and_sigterm_stop_cleanly_and_save_the_learner(tmp_path, tiny, signum):
    sigterm_before = signal.getsignal(signal.SIGTERM)

    def interrupt(learner, metrics):
        if learner.updates == 1:
            os.kill(os.getpid(), signum)  # delivered to the main thread, which waits on the others

    config = _config(tiny)
    env = _live_env(config)
    result = train_realtime(config, env, tmp_path, show_progress=False, on_update=interrupt, max_seconds=20.0)
    assert result.interrupted and result.stopped_by == "interrupt" and result.updates >= 1
    state = load_checkpoint(tmp_path / "checkpoints")
    assert state["updates"] == result.updates and state["global_step"] == result.global_step
    assert result.global_step % 32 == 0 and result.global_step >= 32 * result.updates
    assert env.closed == 1
    assert signal.getsignal(signal.SIGTERM) is sigterm_before


def test_the_stop_hotkey_ends_the_run_cleanly_with_a_checkpoint(tmp_path, tiny):
    config = _config(tiny)
    env = _live_env(config, fail_at=80, error=StopRequested("F12 pressed"))
    result = train_realtime(config, env, tmp_path, show_progress=False, max_seconds=20.0)
    assert result.interrupted and result.stopped_by == "hotkey"
    assert result.actor_steps == 79 and env.closed == 1
    assert load_checkpoint(tmp_path / "checkpoints")["updates"] == result.updates


def test_resume_continues_from_the_checkpoint(tmp_path, tiny):
    config = _config(tiny, total_steps=32)
    first = train_realtime(config, _live_env(config), tmp_path, show_progress=False)
    assert (first.global_step, first.updates) == (32, 1)
    config.total_steps = 64
    second = train_realtime(config, _live_env(config), tmp_path, resume=True, show_progress=False)
    assert second.global_step == 64 and second.updates == 2 and second.actor_steps == 32
    assert [line["step"] for line in _lines(tmp_path)] == [32, 64]


def test_bad_inputs_are_refused_and_the_env_is_still_closed(tmp_path, tiny):
    config = _config(tiny, env__num_envs=2)
    env = _live_env(_config(tiny))
    with pytest.raises(ValueError, match="num_envs = 1"):
        train_realtime(config, env, tmp_path, show_progress=False)
    assert env.closed == 1
    unpaced = Spy(make_env(_config(tiny).env))
    unpaced.metadata = {"render_modes": []}  # no render_fps: the rate is unknown
    with pytest.raises(ValueError, match="render_fps"):
        train_realtime(_config(tiny), unpaced, tmp_path, show_progress=False, max_seconds=5.0)
    assert unpaced.closed == 1


def test_the_live_actor_holds_its_exploration_noise(tmp_path, tiny, monkeypatch):
    """``noise_hold``: the actor keeps each Gaussian draw for that many control steps (a live stick
    pushes one way for a while instead of jittering). One rollout: it is acted with the initial weights."""
    handed_over, real_put = [], RolloutQueue.put

    def record_put(queue, rollout: ActorRollout):
        handed_over.append(rollout)
        return real_put(queue, rollout)

    monkeypatch.setattr(RolloutQueue, "put", record_put)
    config = _config(tiny, total_steps=32, novelty_name="none", noise_hold=5)
    initial_agents = []
    monkeypatch.setattr(realtime, "Learner", _recording(realtime.Learner, initial_agents))
    train_realtime(config, _live_env(config), tmp_path, show_progress=False)
    (rollout,), agent = handed_over, initial_agents[0]
    with torch.no_grad():
        mean = agent.actor(agent.encoder(rollout.obs))
    eps = (rollout.actions - mean) / agent.log_std.exp()
    same = [torch.allclose(eps[t], eps[t - 1], atol=1e-4) for t in range(1, 32)]
    assert same == [t % 5 != 0 for t in range(1, 32)]


def _recording(learner_class, initial_agents: list):
    """``learner_class`` whose learners' agents, as built, are copied into ``initial_agents``."""

    def build(*args, **kwargs):
        learner = learner_class(*args, **kwargs)
        initial_agents.append(copy.deepcopy(learner.agent))
        return learner

    return build
