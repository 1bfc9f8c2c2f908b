"""The run report of a short real run: opened in headless Chromium, every section rendered with data;
episode recording and frame novelty checked against the env and the novelty module directly."""

from __future__ import annotations

import base64
import io
import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tests.conftest import COUNT_ENV_ID, tiny_config
from wanderlust.algo.trainer import train
from wanderlust.cli import main
from wanderlust.envs.factory import make_env, obs_spec
from wanderlust.novelty import PixelConfig, PixelNovelty, make_novelty
from wanderlust.report import record as record_module
from wanderlust.report.build import write_report
from wanderlust.report.data import visit_counts
from wanderlust.report.record import NoveltyScorer, load_run, map_frame, record_episode
from wanderlust.runtime.logger import MetricLogger
from wanderlust.runtime.rundir import create_run_dir, save_config

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SECTIONS = ("curves", "coverage-map", "novel-frames", "episode")


def _train_run(folder: Path, **changes) -> Path:
    config = tiny_config(**changes)
    run_dir = create_run_dir(folder, name_parts=(), resume=False)
    save_config(run_dir, config.to_dict())
    train(config, run_dir, show_progress=False)
    return run_dir


@pytest.fixture(scope="module")
def maze_run(tmp_path_factory) -> Path:
    """4 updates of 2 maze envs x 16 steps, episodes of 20 steps (so coverage gets logged), episodic novelty."""
    return _train_run(tmp_path_factory.mktemp("maze") / "run", novelty_name="episodic", total_steps=128,
                      checkpoint_every=64, env__max_episode_steps=20)


class _Dom(HTMLParser):
    """Collects every img (with the section it is in) and the decode-check element."""

    def __init__(self) -> None:
        super().__init__()
        self.section: str | None = None
        self.images: list[dict] = []
        self.decode_check: dict = {}

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attributes = dict(attrs)
        if tag == "section":
            self.section = attributes.get("id")
        elif tag == "img":
            self.images.append({"section": self.section, **attributes})
        elif attributes.get("id") == "decode-check":
            self.decode_check = attributes

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self.section = None


def _images(dom: _Dom, section: str) -> list[dict]:
    return [image for image in dom.images if image["section"] == section]


def test_report_renders_every_section_with_data_in_headless_chromium(maze_run, tmp_path):
    report = write_report(maze_run, tmp_path / "report.html", episodes=2, seed=5)
    page = report.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)  # self-contained: nothing to fetch
    assert CHROMIUM.exists(), "Debian's chromium is needed for this test (apt-get install chromium)"
    screenshot = tmp_path / "report.png"
    done = subprocess.run(
        [str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium'}", "--window-size=1300,2600",
         "--run-all-compositor-stages-before-draw", "--virtual-time-budget=5000", f"--screenshot={screenshot}",
         "--dump-dom", report.as_uri()],
        capture_output=True, text=True, timeout=90,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    dom = _Dom()
    dom.feed(done.stdout)

    summary = json.loads(dom.decode_check["data-summary"])  # written by the page's script after load
    assert set(summary) == set(SECTIONS)
    for section in SECTIONS:
        assert summary[section]["images"] >= 1 and summary[section]["decoded"] == summary[section]["images"], summary
        assert all(int(image["data-natural-width"]) > 0 for image in _images(dom, section))

    curves = [image for image in _images(dom, "curves") if image.get("data-kind") == "curve"]
    assert len(curves) == 6  # coverage, returns, novelty, losses, speed, other (learning rate): all logged
    assert all(int(image["data-points"]) >= 2 for image in curves)
    assert "charts/coverage" in curves[0]["data-metrics"]
    assert "novelty/episodic_temporal_loss" in " ".join(image["data-metrics"] for image in curves)
    (maze_map,) = _images(dom, "coverage-map")
    assert int(maze_map["data-cells-visited"]) >= 2  # two episodes, each starts in a cell
    assert {image["data-kind"] for image in _images(dom, "novel-frames")} == {"frames", "curve"}
    (animation,) = _images(dom, "episode")
    assert animation["src"].startswith("data:image/gif") and int(animation["data-frames"]) == 21  # reset + 20 steps

    shot = np.asarray(Image.open(screenshot).convert("RGB"))
    assert shot.shape == (2600, 1300, 3)
    assert len(np.unique(shot.reshape(-1, 3), axis=0)) > 100  # plots and frames, not a blank page


def _decoded(page: str, section: str) -> list[Image.Image]:
    body = re.search(rf'<section id="{section}">(.*?)</section>', page, re.S).group(1)
    return [Image.open(io.BytesIO(base64.b64decode(data)))
            for data in re.findall(r'src="data:image/[a-z]+;base64,([^"]+)"', body)]


def test_report_of_a_non_maze_env_says_so_and_still_shows_frames(tmp_path):
    run = _train_run(tmp_path / "run", env__env_id=COUNT_ENV_ID, env__frame_stack=1, env__num_envs=1,
                     novelty_name="pixel", total_steps=32, checkpoint_every=32)
    page = write_report(run, episodes=1).read_text()
    assert (run / "report.html").is_file()
    coverage = re.search(r'<section id="coverage-map">(.*?)</section>', page, re.S).group(1)
    assert "not a maze env" in coverage and "<img" not in coverage
    assert "Coverage: not a maze env" in page
    for section in ("curves", "novel-frames", "episode"):
        images = _decoded(page, section)
        assert images and all(image.size[0] > 0 for image in images)
    assert _decoded(page, "episode")[0].n_frames == 4  # CountEnv's first episode: reset + 3 steps


def test_report_of_a_live_game_run_has_curves_and_says_why_nothing_is_replayed(tmp_path):
    config = tiny_config(env__env_id="screen", env__num_envs=1)
    run = create_run_dir(tmp_path / "live", name_parts=(), resume=False)
    save_config(run, config.to_dict())
    with MetricLogger(run, tensorboard=False) as logger:
        for step in (16, 32, 48):
            logger.log(step, {"charts/SPS": 10.0 + step, "charts/actor_hz": 15.0})
    page = write_report(run).read_text()  # no window and no checkpoint needed: nothing is played
    for section in SECTIONS[1:]:
        body = re.search(rf'<section id="{section}">(.*?)</section>', page, re.S).group(1)
        assert "a live game" in body and "<img" not in body
    speed, other = _decoded(page, "curves")  # SPS, then the runner's actor rate
    assert speed.size[0] > 100 and other.size[0] > 100
    assert 'data-metrics="charts/actor_hz"' in page


def test_recorded_maze_episode_matches_the_env(maze_run):
    run = load_run(maze_run)
    env = make_env(run.config.env, render_mode="rgb_array")
    actions = iter(np.random.default_rng(0).uniform(-1, 1, (20, 4)).astype(np.float32))
    record = record_episode(env, lambda obs: next(actions), seed=3)
    rendered = env.render()
    env.close()
    assert record.steps == 20 and record.ended
    assert record.obs.shape == (21, *run.observation_shape) and record.env_actions.shape == (20, 4)
    assert record.cells.shape == (21, 2) and record.poses.shape == (21, 4)
    assert record.coverage == pytest.approx((visit_counts(record.cells, 5) > 0).mean())
    np.testing.assert_array_equal(record.cells[:, 0], np.floor(record.poses[:, 1]).astype(np.int64))
    redrawn = map_frame(record, 20)  # the map redrawn from the record = the env's own map at the end
    assert redrawn.shape == rendered.shape
    assert (redrawn != rendered).any(axis=-1).mean() < 0.01


def test_sequential_scoring_starts_from_empty_memories_and_equals_a_fresh_module(maze_run):
    config = load_run(maze_run).config
    env = make_env(config.env)
    spec = obs_spec(env.observation_space, config.env)
    actions = iter(np.random.default_rng(1).uniform(-1, 1, (20, 4)).astype(np.float32))
    record = record_episode(env, lambda obs: next(actions), seed=4)
    env.close()
    trained = PixelNovelty(spec, num_envs=2, config=PixelConfig(history=4), device="cpu")
    stale = torch.from_numpy(record.obs[:2] // 2)  # the memories hold other frames, as after training
    for _ in range(3):
        trained.reward(stale, stale, torch.zeros(2, 4), torch.zeros(2, dtype=torch.bool))
    scores = NoveltyScorer(trained, num_envs=2).score_episode(record)

    fresh = PixelNovelty(spec, num_envs=1, config=PixelConfig(history=4), device="cpu")
    expected = [float(fresh.reward(torch.from_numpy(record.obs[t:t + 1]), torch.from_numpy(record.obs[t + 1:t + 2]),
                                   torch.from_numpy(record.env_actions[t:t + 1]), torch.tensor([t == 19]))[0])
                for t in range(20)]
    np.testing.assert_allclose(scores, expected, rtol=1e-6)


def test_whole_rollout_scoring_is_the_same_in_chunks(maze_run, monkeypatch):
    config = load_run(maze_run).config
    env = make_env(config.env)
    novelty = make_novelty("rnd", config.novelty, obs_spec(env.observation_space, config.env), env.action_space,
                           2, "cpu")
    record = record_episode(env, lambda obs: env.action_space.sample(), seed=6, max_steps=7)
    env.close()
    assert record.steps == 7 and not record.ended  # stopped by max_steps
    whole = NoveltyScorer(novelty, 2).score_episode(record)
    monkeypatch.setattr(record_module, "NOVELTY_CHUNK", 3)
    np.testing.assert_allclose(NoveltyScorer(novelty, 2).score_episode(record), whole, rtol=1e-6)
    single = [NoveltyScorer(novelty, 2).score(record.obs[t], record.env_actions[t], record.obs[t + 1], False)
              for t in range(7)]
    np.testing.assert_allclose(single, whole, rtol=1e-5)


def test_report_command_prints_the_path_and_bad_folders_are_one_line_errors(maze_run, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(maze_run), "--episodes", "1", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out) and out.stat().st_size > 10_000
    empty = tmp_path / "empty"
    empty.mkdir()
    no_checkpoint = tmp_path / "no-checkpoint"
    no_checkpoint.mkdir()
    for name in ("config.json", "metrics.jsonl"):
        (no_checkpoint / name).write_bytes((maze_run / name).read_bytes())
    blank_metrics = tmp_path / "blank"
    blank_metrics.mkdir()
    (blank_metrics / "metrics.jsonl").write_text("")
    for folder, expected in ((tmp_path / "missing", "not found"), (empty, "metrics.jsonl not found"),
                             (no_checkpoint, "no checkpoint"), (blank_metrics, "is empty")):
        assert main(["report", str(folder)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("wanderlust: error:") and expected in err[0], err
