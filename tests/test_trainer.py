"""The synchronous runner: episode boundaries, the gradient-flow guarantee, checkpoints, resume."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.conftest import COUNT_ENV_ID
from wanderlust.algo.evaluate import load_policy
from wanderlust.algo.storage import RolloutStorage
from wanderlust.algo.trainer import Learner, collect_rollout, compute_advantages, train
from wanderlust.envs.factory import make_vector_env
from wanderlust.runtime.checkpoint import list_checkpoints, load_checkpoint
from wanderlust.runtime.rng import seed_everything
from wanderlust.runtime.rundir import save_config


def _count_setup(tiny, novelty="none"):
    config = tiny(env__env_id=COUNT_ENV_ID, env__frame_stack=1, env__num_envs=1, ppo__num_steps=8,
                  novelty_name=novelty, normalize_intrinsic=False)
    envs = make_vector_env(config.env)
    learner = Learner(config, envs.single_observation_space, envs.single_action_space, torch.device("cpu"))
    storage = RolloutStorage(8, 1, envs.single_observation_space.shape, envs.single_action_space, torch.device("cpu"))
    obs, _ = envs.reset(seed=0)
    return config, envs, learner, storage, obs


def test_rollout_keeps_final_frames_and_marks_episode_ends(tiny):
    config, envs, learner, storage, obs = _count_setup(tiny)
    next_obs, _ = collect_rollout(envs, learner, storage, obs)
    envs.close()
    # episode 0: obs 0,1,2 -> terminates on the step that shows frame 3; episode 1 starts at 10.
    seen = storage.obs[:, 0, 0, 0, 0].tolist()
    produced = storage.next_obs[:, 0, 0, 0, 0].tolist()
    assert seen == [0, 1, 2, 10, 11, 12, 13, 20]
    assert produced == [1, 2, 3, 11, 12, 13, 14, 21]  # the final frames 3 and 14, never the reset frames
    assert storage.episode_ends[:, 0].tolist() == [False, False, True, False, False, False, True, False]
    assert next_obs[0, 0, 0, 0] == 21


def test_truncation_bootstraps_from_the_final_frame_and_termination_does_not(tiny):
    config, envs, learner, storage, obs = _count_setup(tiny)
    collect_rollout(envs, learner, storage, obs)
    envs.close()
    gamma = config.ppo.gamma
    final_truncated = storage.next_obs[6:7, 0]
    expected = 0.5 + gamma * learner.agent.values(final_truncated)[0][0]
    assert storage.rewards_ext[6, 0].item() == pytest.approx(expected.item(), rel=1e-6)
    assert storage.rewards_ext[2, 0].item() == 1.0  # terminated: the true reward, no bootstrap
    assert storage.rewards_ext[0, 0].item() == 0.5


def test_advantages_do_not_cross_episode_boundaries_but_intrinsic_ones_do(tiny):
    config, envs, learner, storage, obs = _count_setup(tiny)
    next_obs, _ = collect_rollout(envs, learner, storage, obs)
    envs.close()
    storage.rewards_int.copy_(torch.arange(8, dtype=torch.float32).reshape(8, 1))
    adv_ext, adv_int, ret_ext, ret_int = compute_advantages(learner, storage, next_obs)
    # The extrinsic return at the terminal step is exactly its reward: nothing from the next episode.
    assert ret_ext[2, 0].item() == pytest.approx(1.0, abs=1e-6)
    # Changing a value after the boundary leaves advantages before it untouched (extrinsic stream) ...
    storage.values_ext[3:] += 100.0
    adv_ext_2, _, _, _ = compute_advantages(learner, storage, next_obs)
    assert torch.allclose(adv_ext_2[:3], adv_ext[:3])
    # ... while the intrinsic stream is non-episodic: step 2 bootstraps from step 3's value.
    storage.values_int[3] += 100.0
    _, adv_int_2, _, _ = compute_advantages(learner, storage, next_obs)
    assert adv_int_2[2, 0] > adv_int[2, 0] + 1.0


def test_one_update_reaches_every_policy_weight_and_never_the_rnd_target(tmp_path, tiny):
    config = tiny(total_steps=32)  # one update
    seen = {}

    def inspect(learner, metrics):
        seen["grads"] = {n: p.grad.clone() if p.grad is not None else None for n, p in learner.agent.named_parameters()}
        seen["target"] = [p.detach().clone() for p in learner.novelty.target.parameters()]
        seen["predictor"] = [p.detach().clone() for p in learner.novelty.predictor.parameters()]

    spaces_ = _spaces(config)
    seed_everything(config.seed)  # train() seeds the same way before building its learner
    probe = Learner(config, *spaces_, torch.device("cpu"))
    target_before = [p.detach().clone() for p in probe.novelty.target.parameters()]
    predictor_before = [p.detach().clone() for p in probe.novelty.predictor.parameters()]
    train(config, tmp_path, show_progress=False, on_update=inspect)
    assert seen["grads"], "no update ran"
    for name, grad in seen["grads"].items():
        assert grad is not None, f"{name} got no gradient"
        assert torch.isfinite(grad).all(), name
        assert grad.abs().sum() > 0, f"{name} has an all-zero gradient"
    assert all(torch.equal(a, b) for a, b in zip(target_before, seen["target"]))
    assert any(not torch.equal(a, b) for a, b in zip(predictor_before, seen["predictor"]))


def _spaces(config):
    envs = make_vector_env(config.env)
    try:
        return envs.single_observation_space, envs.single_action_space
    finally:
        envs.close()


@pytest.mark.parametrize("novelty", ["pixel", "rnd", "icm", "episodic", "none"])
def test_training_runs_with_every_novelty_and_writes_a_run_folder(tmp_path, tiny, novelty):
    config = tiny(novelty_name=novelty, env__max_episode_steps=20)
    result = train(config, tmp_path, show_progress=False)
    assert result.global_step == 64 and result.updates == 2 and not result.interrupted
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [32, 64]
    assert all(np.isfinite(line["losses/policy_loss"]) for line in lines)
    assert "charts/coverage" in lines[-1] and 0 < lines[-1]["charts/coverage"] <= 1
    if novelty != "none":
        assert lines[-1]["novelty/reward_raw_mean"] > 0
    assert list((tmp_path / "tb").iterdir())
    assert [int(p.name.split("-")[1]) for p in list_checkpoints(tmp_path / "checkpoints")] == [32, 64]


def test_resume_restores_the_exact_learner_state_and_continues_the_curve(tmp_path, tiny):
    config = tiny(total_steps=32)
    train(config, tmp_path, show_progress=False)
    saved = load_checkpoint(tmp_path / "checkpoints")
    restored = Learner(config, *_spaces(config), torch.device("cpu"))
    restored.load_state_dict(saved)
    for (name, a), b in zip(saved["agent"].items(), restored.agent.state_dict().values()):
        assert torch.equal(a, b), name
    assert restored.global_step == 32 and restored.updates == 1

    config.total_steps = 64
    result = train(config, tmp_path, resume=True, show_progress=False)
    assert result.global_step == 64 and result.updates == 2
    steps = [json.loads(line)["step"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert steps == [32, 64]


def test_resumed_sampling_matches_uninterrupted_sampling(tmp_path, tiny):
    """RNG state is part of the checkpoint: the first action sampled after loading equals the one
    the original process would have sampled next."""
    config = tiny(total_steps=32)
    spaces_ = _spaces(config)
    learner = Learner(config, *spaces_, torch.device("cpu"))
    obs = torch.randint(0, 255, (2, *spaces_[0].shape), dtype=torch.uint8)
    state = learner.state_dict()
    expected = learner.agent.act(obs).action
    other = Learner(config, *spaces_, torch.device("cpu"))
    torch.manual_seed(12345)
    other.load_state_dict(state)
    assert torch.equal(other.agent.act(obs).action, expected)


def test_ctrl_c_saves_the_last_finished_update(tmp_path, tiny):
    config = tiny(total_steps=320, checkpoint_every=10_000)

    def interrupt(learner, metrics):
        if learner.updates == 2:
            raise KeyboardInterrupt

    result = train(config, tmp_path, show_progress=False, on_update=interrupt)
    assert result.interrupted and result.global_step == 64
    state = load_checkpoint(tmp_path / "checkpoints")
    assert state["global_step"] == 64 and state["updates"] == 2


def test_binned_stick_policy_trains_resumes_and_plays_back(tmp_path, tiny):
    """``action_bins``: the rollout stores bin indices, ICM sees their stick values, and the saved
    config rebuilds the same head for resume and play."""
    config = tiny(total_steps=32, action_bins=5, novelty_name="icm")
    train(config, tmp_path, show_progress=False)
    config.total_steps = 64
    result = train(config, tmp_path, resume=True, show_progress=False)
    assert result.global_step == 64 and result.updates == 2
    save_config(tmp_path, config.to_dict())  # as `wanderlust train` does
    loaded_config, agent = load_policy(tmp_path)
    assert loaded_config.action_bins == 5 and agent.action_bins == 5 and agent.log_std is None
    saved = load_checkpoint(tmp_path / "checkpoints")
    for (name, a), b in zip(saved["agent"].items(), agent.state_dict().values()):
        assert torch.equal(a, b), name
    obs = torch.randint(0, 255, (16, *_spaces(config)[0].shape), dtype=torch.uint8)
    played = agent.act(obs).env_action
    assert set(played.unique().tolist()) <= {-1.0, -0.5, 0.0, 0.5, 1.0}
