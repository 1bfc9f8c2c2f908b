"""Held exploration noise: each env keeps its Gaussian noise for ``noise_hold`` steps, in training,
in rollout workers and in evaluation, and the log-probs PPO uses stay those of the sampled action."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from wanderlust.agent.actor_critic import ActorCritic, build_agent
from wanderlust.agent.noise import HeldNoise, check_noise_hold, make_held_noise
from wanderlust.algo.evaluate import PolicyActor, play_episodes, start_episode
from wanderlust.algo.storage import RolloutStorage
from wanderlust.algo.trainer import Learner, collect_rollout
from wanderlust.algo.worker import RolloutWorker, WorkerSpec, policy_weights
from wanderlust.envs.factory import make_vector_env

BOX = spaces.Box(-1.0, 1.0, (4,), dtype=np.float32)
OBS_SHAPE = (2, 36, 36)


def _noise_of(agent: ActorCritic, obs: torch.Tensor, raw_actions: torch.Tensor) -> torch.Tensor:
    """The standard-normal draws behind stored raw actions: ``(u - mean(obs)) / std``."""
    with torch.no_grad():
        mean = agent.actor(agent.encoder(obs))
    return (raw_actions - mean) / agent.log_std.exp()


def test_noise_is_held_for_hold_steps_then_redrawn() -> None:
    torch.manual_seed(0)
    noise = HeldNoise(num_envs=2, action_dim=3, hold=3)
    draws = [noise.next().clone() for _ in range(7)]
    for t in (1, 2):
        assert torch.equal(draws[t], draws[0])
    for t in (4, 5):
        assert torch.equal(draws[t], draws[3])
    assert not torch.equal(draws[3], draws[0]) and not torch.equal(draws[6], draws[3])


def test_an_ended_episode_redraws_only_that_envs_noise() -> None:
    torch.manual_seed(0)
    noise = HeldNoise(num_envs=3, action_dim=2, hold=10)
    first = noise.next().clone()
    noise.episodes_ended(np.array([False, True, False]))
    second = noise.next()
    assert torch.equal(second[0], first[0]) and torch.equal(second[2], first[2])
    assert not torch.equal(second[1], first[1])


def test_hold_one_draws_exactly_as_fresh_sampling_does() -> None:
    noise = HeldNoise(4, 3, hold=1)
    torch.manual_seed(5)
    draws = [noise.next().clone() for _ in range(3)]
    torch.manual_seed(5)
    fresh = [torch.randn(4, 3) for _ in range(3)]
    assert all(torch.equal(a, b) for a, b in zip(draws, fresh))


@pytest.mark.parametrize("value", [0, -2, 1.5, True, "4", None])
def test_bad_noise_hold_is_refused_in_one_line(value) -> None:
    with pytest.raises(ValueError, match=r"noise_hold must be an integer >= 1") as error:
        check_noise_hold(value)
    assert "\n" not in str(error.value)


def test_only_a_gaussian_policy_holds_its_noise() -> None:
    """Discrete and binned policies sample fresh every step whatever noise_hold says (the default
    preset's hold must not break ``wanderlust train ALE/...``)."""
    assert make_held_noise(1, ActorCritic(OBS_SHAPE, BOX, encoder="seed"), 2) is None
    for agent in (ActorCritic(OBS_SHAPE, spaces.Discrete(5), encoder="seed"),
                  ActorCritic(OBS_SHAPE, BOX, encoder="seed", action_bins=5)):
        assert make_held_noise(4, agent, 2) is None
    made = make_held_noise(4, ActorCritic(OBS_SHAPE, BOX, encoder="seed"), 2)
    assert isinstance(made, HeldNoise) and made.noise.shape == (2, 4)


def test_acting_with_given_noise_samples_mean_plus_std_times_noise_with_its_exact_log_prob() -> None:
    torch.manual_seed(0)
    agent = ActorCritic(OBS_SHAPE, BOX, encoder="seed", log_std_init=-0.5)
    obs = torch.randint(0, 256, (3, *OBS_SHAPE), dtype=torch.uint8)
    eps = torch.randn(3, 4)
    out = agent.act(obs, noise=eps)
    torch.testing.assert_close(_noise_of(agent, obs, out.action), eps)
    torch.testing.assert_close(agent.evaluate(obs, out.action).log_prob.detach(), out.log_prob)
    with pytest.raises(ValueError, match="needs a squashed Gaussian"):
        ActorCritic(OBS_SHAPE, spaces.Discrete(3), encoder="seed").act(obs, noise=eps)


def _held_in_blocks(eps: torch.Tensor, ends: torch.Tensor, hold: int) -> None:
    """``eps [T, N, A]``: within each env, constant for ``hold`` steps at a time, restarting after
    an episode end; a new block differs from the one before."""
    T, N, _ = eps.shape
    for env in range(N):
        age = 0
        for t in range(1, T):
            age = 0 if bool(ends[t - 1, env]) else age + 1
            same = torch.allclose(eps[t, env], eps[t - 1, env], atol=1e-4)
            assert same == (age % hold != 0), (env, t, age)


def test_the_runner_holds_each_envs_noise_and_stores_its_log_probs(tiny) -> None:
    config = tiny(noise_hold=3, novelty_name="none", ppo__num_steps=16, env__max_episode_steps=7)
    envs = make_vector_env(config.env)
    learner = Learner(config, envs.single_observation_space, envs.single_action_space, torch.device("cpu"))
    storage = RolloutStorage(16, 2, envs.single_observation_space.shape, envs.single_action_space,
                             torch.device("cpu"))
    collect_rollout(envs, learner, storage, envs.reset(seed=0)[0])
    envs.close()
    assert storage.episode_ends.any()  # the 7-step episodes end inside the rollout
    eps = _noise_of(learner.agent, storage.flat(storage.obs), storage.flat(storage.actions)).view(16, 2, 4)
    _held_in_blocks(eps, storage.episode_ends, hold=3)
    evaluated = learner.agent.evaluate(storage.flat(storage.obs), storage.flat(storage.actions)).log_prob
    assert torch.allclose(evaluated, storage.flat(storage.log_probs), atol=1e-5)


def test_rollout_workers_hold_noise_like_the_in_process_runner(tiny) -> None:
    config = tiny(noise_hold=4, novelty_name="none", workers=1, env__num_envs=2, env__max_episode_steps=9)
    worker = RolloutWorker(config, WorkerSpec(0, 0, 2))
    rollout = worker.collect(policy_weights(worker.agent), 16)
    worker.close()
    obs = torch.from_numpy(rollout.obs).flatten(0, 1)
    actions = torch.from_numpy(rollout.actions).flatten(0, 1)
    eps = _noise_of(worker.agent, obs, actions).view(16, 2, 4)
    ends = torch.from_numpy(np.logical_or(rollout.terminated, rollout.truncated))
    assert ends.any()
    _held_in_blocks(eps, ends, hold=4)


def test_evaluation_holds_noise_and_a_new_episode_redraws_it() -> None:
    torch.manual_seed(0)
    agent = ActorCritic(OBS_SHAPE, BOX, encoder="seed")
    obs = np.zeros(OBS_SHAPE, dtype=np.uint8)  # one observation: the mean never moves
    act = PolicyActor(agent, noise_hold=5)
    actions = [act(obs) for _ in range(7)]
    assert all(np.array_equal(a, actions[0]) for a in actions[:5])
    assert not np.array_equal(actions[5], actions[4]) and np.array_equal(actions[6], actions[5])
    start_episode(act)
    assert not np.array_equal(act(obs), actions[6])
    fresh = PolicyActor(agent)  # noise_hold 1: a new draw every step
    assert not np.array_equal(fresh(obs), fresh(obs))
    greedy = PolicyActor(agent, deterministic=True, noise_hold=5)
    assert np.array_equal(greedy(obs), greedy(obs)) and greedy.noise is None
    start_episode(lambda o: o)  # a plain function needs no telling


def test_play_episodes_tells_the_policy_of_each_new_episode(tiny) -> None:
    config = tiny(noise_hold=1000, env__max_episode_steps=3)
    starts = []

    class Recorder:
        def start_episode(self) -> None:
            starts.append(len(calls))

        def __call__(self, obs):
            calls.append(obs)
            return np.zeros(4, dtype=np.float32)

    calls: list = []
    played = play_episodes(config.env, Recorder(), episodes=3, seed=0)
    assert [steps for steps, _, _ in played] == [3, 3, 3] and starts == [0, 3, 6]


def test_build_agent_and_held_noise_from_a_config(tiny) -> None:
    config = tiny(noise_hold=6)
    envs = make_vector_env(config.env)
    agent = build_agent(config, envs.single_observation_space.shape, envs.single_action_space)
    envs.close()
    noise = make_held_noise(config.noise_hold, agent, config.env.num_envs)
    assert noise is not None and noise.hold == 6
