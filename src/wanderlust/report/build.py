"""``wanderlust report RUN_DIR``: learning curves, coverage maps, novel frames and an episode
animation of a trained run, in one self-contained ``report.html``.

Sections (element ids are stable): ``curves``, ``coverage-map``, ``novel-frames``, ``episode``.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from wanderlust.algo.evaluate import policy_action
from wanderlust.envs.factory import is_maze, make_env
from wanderlust.report import plots
from wanderlust.report.data import (
    CurveGroup, agent_view, curve_groups, rank_novelty, sample_indices, upscale, visit_counts,
)
from wanderlust.report.html import Section, figure, notice, paragraph, render_page
from wanderlust.report.record import EpisodeRecord, LoadedRun, NoveltyScorer, load_run, map_frame, record_episode
from wanderlust.runtime.config import SCREEN_ID, TrainConfig
from wanderlust.runtime.fs import atomic_write_text
from wanderlust.runtime.logger import read_metrics
from wanderlust.runtime.rundir import METRICS_FILE, load_config

REPORT_FILE = "report.html"
MAX_EPISODE_STEPS = 2000
"""Recorded episodes stop here (the report's memory and size stay bounded on long games)."""
MAP_PANELS = 4
"""Episodes drawn on the coverage map (each maze episode has its own layout)."""
NOVEL_FRAMES = 6
"""Frames in each row (most / least novel)."""
GIF_FRAMES = 100
"""Most frames in the episode animation (evenly spaced over the episode)."""
GIF_FPS = 10.0
VIEW_PIXELS = 192
"""The agent's view is upscaled (whole factors) to about this height in the animation."""


def write_report(run_dir: Path, out: Path | None = None, episodes: int = 3, seed: int = 1000) -> Path:
    """Write the report of ``run_dir`` to ``out`` (default ``run_dir/report.html``) and return its path.

    ``episodes`` evaluation episodes (seeds ``seed, seed + 1, ...``, sampled actions) are played with
    the latest checkpoint; the first is scored by the run's novelty module and animated. Raises
    FileNotFoundError / ValueError with one line when the folder, metrics, config or checkpoint is missing.
    """
    run_dir = Path(run_dir)
    if episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {episodes}")
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run folder {run_dir} not found; pass the folder that 'wanderlust train' wrote")
    rows = read_metrics(run_dir)
    if not rows:
        raise ValueError(f"{run_dir / METRICS_FILE} is empty; train for at least one update before reporting")
    config = TrainConfig.from_dict(load_config(run_dir))
    meta = {"run folder": str(run_dir), "env": config.env.env_id, "novelty": config.novelty_name,
            "encoder": config.encoder, "config total_steps": f"{config.total_steps:,}"}
    sections = [curves_section(curve_groups(rows), is_maze(config.env.env_id))]
    if config.env.env_id == SCREEN_ID:
        why = "a live game (env 'screen'): evaluation episodes are not replayed; see the curves above"
        sections += [Section("coverage-map", "Coverage map", notice(f"not a maze env: {why}")),
                     Section("novel-frames", "Most and least novel frames", notice(why)),
                     Section("episode", "Evaluation episode", notice(why))]
    else:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # batch-1 inference: one thread is as fast and does not fight other work
        try:
            sections += replay_sections(run_dir, config, episodes, seed, meta)
        finally:
            torch.set_num_threads(threads)
    meta["generated"] = time.strftime("%Y-%m-%d %H:%M:%S")
    page = render_page(f"wanderlust report: {run_dir.name}", meta, sections)
    out = Path(out) if out is not None else run_dir / REPORT_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, page)
    return out


def replay_sections(
    run_dir: Path, config: TrainConfig, episodes: int, seed: int, meta: dict[str, str],
) -> list[Section]:
    """Play the latest checkpoint and build the coverage-map, novel-frames and episode sections
    (adds the checkpoint and evaluation facts to ``meta``)."""
    run = load_run(run_dir)
    records = play_records(run, episodes, seed)
    meta.update({"checkpoint": f"{run.checkpoint.name} ({run.step:,} steps trained)",
                 "evaluation": f"{episodes} episode(s), seeds {seed}..{seed + episodes - 1}, sampled actions"})
    scores = NoveltyScorer(run.novelty, config.env.num_envs).score_episode(records[0])
    channels_per_frame = records[0].obs.shape[1] // config.env.frame_stack if records[0].obs.ndim == 4 else 0
    return [coverage_section(records, config.env.env_id),
            novel_frames_section(records[0], scores, channels_per_frame, config.novelty_name),
            episode_section(records[0], scores, channels_per_frame)]


def play_records(run: LoadedRun, episodes: int, seed: int) -> list[EpisodeRecord]:
    """Seeded evaluation episodes of the run's agent (torch sampling seeded, caller's RNG untouched)."""
    act = policy_action(run.agent, deterministic=False, noise_hold=run.config.noise_hold)
    env = make_env(run.config.env)
    try:
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            return [record_episode(env, act, seed + i, MAX_EPISODE_STEPS) for i in range(episodes)]
    finally:
        env.close()


def curves_section(groups: list[CurveGroup], maze: bool) -> Section:
    """One plot per group with data; a notice for groups with nothing logged."""
    parts = []
    for group in groups:
        if group.series:
            parts.append(figure(plots.curve_group_png(group), "image/png", f"{group.title} curves",
                                attributes={"data-kind": "curve", "data-points": str(group.points),
                                            "data-metrics": ",".join(group.series)}))
        elif group.title == "Coverage" and not maze:
            parts.append(notice("Coverage: not a maze env (no ground-truth cells to count)"))
        else:
            parts.append(notice(f"{group.title}: nothing logged yet (no finished episode or update in metrics.jsonl)"))
    return Section("curves", "Learning curves", "\n".join(parts))


def coverage_section(records: list[EpisodeRecord], env_id: str) -> Section:
    """Visit heatmap, walls and trajectory of the first maze episodes, or 'not a maze env'."""
    if records[0].maze is None:
        return Section("coverage-map", "Coverage map", notice(f"not a maze env ({env_id}): no map or cells to draw"))
    shown = records[:MAP_PANELS]
    counts = [visit_counts(r.cells, r.maze.layout.size) for r in shown]
    coverages = [r.coverage for r in records]
    body = figure(plots.maze_map_png(shown, counts), "image/png", "coverage map",
                  "Colour: steps spent in each cell; line: the agent's path (o start, x end). "
                  "Each episode draws a new maze unless the env keeps a fixed layout.",
                  {"data-kind": "map", "data-cells-visited": str(int(sum((c > 0).sum() for c in counts)))})
    body += paragraph(f"Mean coverage over {len(records)} evaluation episode(s): {np.mean(coverages):.1%} "
                      f"(per episode: {', '.join(f'{c:.0%}' for c in coverages)}).")
    return Section("coverage-map", "Coverage map", body)


def novel_frames_section(record: EpisodeRecord, scores: np.ndarray, channels_per_frame: int, novelty: str) -> Section:
    """The frames of the first episode the novelty module scored highest and lowest, and its trace."""
    title = "Most and least novel frames"
    if channels_per_frame == 0:
        return Section("novel-frames", title, notice("vector observations: no frames to show"))
    if record.steps == 0:
        return Section("novel-frames", title, notice("the episode has no steps"))
    frames = agent_view(record.obs[1:], channels_per_frame)  # frame t+1 is what transition t produced
    most, least = rank_novelty(scores, NOVEL_FRAMES, max(1, len(scores) // (4 * NOVEL_FRAMES)))
    body = figure(plots.novel_frames_png(frames, scores, most, least), "image/png", "most and least novel frames",
                  f"What the agent saw, scored by its trained '{novelty}' module (raw novelty; t = step of "
                  "evaluation episode 0).", {"data-kind": "frames", "data-frames": str(len(most) + len(least))})
    body += figure(plots.novelty_trace_png(scores, np.concatenate([most, least])), "image/png",
                   "novelty over the episode", "Novelty of each step of episode 0; circles: the frames above.",
                   {"data-kind": "curve", "data-points": str(len(scores))})
    if novelty == "none":
        body += notice("This run trained without novelty ('none'): every frame scores 0.")
    return Section("novel-frames", title, body)


def episode_section(record: EpisodeRecord, scores: np.ndarray, channels_per_frame: int) -> Section:
    """An animated GIF of the first evaluation episode: the agent's view (and the maze map)."""
    title = "Evaluation episode"
    if channels_per_frame == 0:
        return Section("episode", title, notice("vector observations: no frames to animate"))
    frames = episode_frames(record, scores, channels_per_frame)
    ending = "ended" if record.ended else f"cut at {record.steps} steps"
    coverage = f", coverage {record.coverage:.0%}" if record.coverage is not None else ""
    caption = (f"Episode 0: {record.steps} steps ({ending}), return {record.episode_return:.3g}{coverage}; "
               f"{len(frames)} frames at {GIF_FPS:g} fps. Left: what the agent sees"
               + ("; right: the maze from above." if record.maze is not None else "."))
    return Section("episode", title, figure(plots.animated_gif(frames, GIF_FPS), "image/gif", "evaluation episode",
                                            caption, {"data-kind": "animation", "data-frames": str(len(frames))}))


def episode_frames(record: EpisodeRecord, scores: np.ndarray, channels_per_frame: int) -> list[np.ndarray]:
    """Up to :data:`GIF_FRAMES` frames ``[H, W, 3]``: the upscaled agent view, the map at that step
    (maze), and a caption with the step and the novelty of the frame."""
    views = agent_view(record.obs, channels_per_frame)  # [T + 1, H, W, 3]
    factor = max(1, VIEW_PIXELS // views.shape[1])
    frames = []
    for t in sample_indices(len(views), GIF_FRAMES):
        parts = [upscale(views[t], factor)]
        if record.maze is not None:
            parts.append(map_frame(record, int(t)))
        text = f"step {t}" + (f"  novelty {scores[t - 1]:.3g}" if t > 0 else "")
        frames.append(plots.caption_frame(plots.side_by_side(parts), text))
    return frames
