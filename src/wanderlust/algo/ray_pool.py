"""RayPool: rollout workers as Ray actors (``--workers N --ray ADDRESS``).

Each actor is a :class:`~wanderlust.algo.worker.RolloutWorker` (its envs, a CPU policy copy, its
own sampling stream) and only acts. Per update the learner puts its weights into Ray's object
store once (``ray.put``) and hands the same reference to every actor; the actors return numpy
rollouts with behaviour log-probs, and the learner does the rest (values, novelty, advantages,
PPO). An actor that dies (``RayActorError``: killed process, lost node) or whose env raises
(``RayTaskError``) is killed, replaced by a fresh actor with advanced seeds, and its share of the
rollout is collected again (:func:`~wanderlust.algo.pool.collect_with_restarts`).

``ray_address='local'`` starts a private loopback cluster with one CPU per worker and stops it on
:meth:`RayPool.close`; ``HOST:PORT`` joins a running cluster with your token (docs/ray.md).
Ray is imported lazily: the rest of wanderlust works without it.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from wanderlust.algo.pool import (
    WORKER_TORCH_THREADS, WorkerLost, collect_with_restarts, last_line, overhead_ms, warn_restart,
)
from wanderlust.algo.rollout import Rollout, merge_rollouts
from wanderlust.algo.worker import RolloutWorker, WorkerSpec, initial_specs
from wanderlust.runtime.config import TrainConfig
from wanderlust.runtime.ray_cluster import LocalRayCluster, connect

ACTOR_CPUS = 1
"""CPUs Ray reserves per worker actor."""


class RayPool:
    """``W`` rollout workers as Ray actors; see the module docstring."""

    def __init__(self, config: TrainConfig, start_update: int = 0) -> None:
        if config.ray_address is None:
            raise ValueError("RayPool needs config.ray_address ('local' or HOST:PORT)")
        self.config, self.serial = config, config.serial_workers
        self.specs = initial_specs(config.env.num_envs, config.workers, start_update)
        self.restarts, self.last_overhead_ms = 0, 0.0
        self._updates = start_update
        self._actors: list = []
        self._ray = None
        self.cluster: LocalRayCluster | None = None
        try:
            if config.ray_address == "local":
                self.cluster = LocalRayCluster.start(config.workers * ACTOR_CPUS, dashboard=config.ray_dashboard)
                self._ray = connect(self.cluster.address, self.cluster.token_path)
                if self.cluster.dashboard_url:
                    print(f"wanderlust: Ray dashboard at {self.cluster.dashboard_url} "
                          f"(log in with the token in {self.cluster.token_path})", file=sys.stderr)
            else:
                self._ray = connect(config.ray_address)
            self._warn_if_too_small()
            self._actor_class = self._ray.remote(num_cpus=ACTOR_CPUS, max_restarts=0, max_task_retries=0)(RolloutWorker)
            self._actors = [self._start(spec) for spec in self.specs]
            try:
                self.observation_space, self.action_space = self._ray.get(self._actors[0].spaces.remote())
            except self._ray.exceptions.RayError as error:
                raise RuntimeError(f"rollout workers could not start on the Ray cluster: {last_line(error)}") from None
        except BaseException:
            self.close()
            raise

    def _warn_if_too_small(self) -> None:
        cpus = self._ray.cluster_resources().get("CPU", 0)
        if cpus < len(self.specs) * ACTOR_CPUS:
            warnings.warn(f"the Ray cluster has {cpus:g} CPUs for {len(self.specs)} workers needing {ACTOR_CPUS} each: "
                          "some will wait for resources", RuntimeWarning, stacklevel=3)

    def _start(self, spec: WorkerSpec):
        return self._actor_class.remote(self.config, spec, WORKER_TORCH_THREADS)

    def worker_pids(self) -> list[int]:
        """The OS process of every actor (tests kill one)."""
        return self._ray.get([actor.pid.remote() for actor in self._actors])

    def collect(self, weights: dict[str, np.ndarray], num_steps: int) -> Rollout:
        start = time.perf_counter()
        weights_ref = self._ray.put(weights)  # once per update, shared by every actor
        rollouts = collect_with_restarts(
            len(self._actors), submit=lambda i: self._actors[i].collect.remote(weights_ref, num_steps),
            wait=self._wait, replace=self._replace, serial=self.serial,
        )
        self._updates += 1
        self.last_overhead_ms = overhead_ms(time.perf_counter() - start, [r.seconds for r in rollouts], self.serial)
        return merge_rollouts(rollouts)

    def _wait(self, ref) -> Rollout:
        try:
            return self._ray.get(ref)
        except self._ray.exceptions.RayError as error:  # actor died, env raised, object lost with a node
            raise WorkerLost(f"{type(error).__name__}: {last_line(error)}") from error

    def _replace(self, index: int, error: WorkerLost) -> None:
        self.restarts += 1
        warn_restart(index, error, self.restarts)
        self._kill(self._actors[index])
        self.specs[index] = self.specs[index].replacement(self._updates)
        self._actors[index] = self._start(self.specs[index])

    def _kill(self, actor) -> None:
        try:
            self._ray.kill(actor)
        except (self._ray.exceptions.RayError, ValueError):
            pass  # already gone

    def close(self) -> None:
        """Kill the actors, disconnect, and stop the cluster if this pool started it."""
        if self._ray is not None:
            for actor in self._actors:
                self._kill(actor)
            self._actors = []
            if self._ray.is_initialized():
                self._ray.shutdown()
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None
