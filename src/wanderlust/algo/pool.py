"""Worker pools: ``collect(weights, T) -> Rollout [T, N]`` from ``W`` rollout workers.

The contract (:class:`WorkerPool`): every call broadcasts the learner's current weights, each
worker steps its share of the ``N`` envs ``T`` times, and the pool returns the merged rollout in
worker order. A worker that dies (env crash, killed process, lost node) is replaced by a fresh one
(new envs, advanced seeds: :meth:`WorkerSpec.replacement`) which collects that share again; the
learner is never involved, so its state is never lost. ``restarts`` counts replacements.

Two implementations, same results for the same seed:

- :class:`LocalPool`: one subprocess per worker on this machine (``--workers N``), or with
  ``serial=True`` all workers in this process one after another (the serial twin, for
  debugging and exact tests);
- :class:`wanderlust.algo.ray_pool.RayPool`: one Ray actor per worker (``--ray ADDRESS``).
"""

from __future__ import annotations

import multiprocessing
import pickle
import signal
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from gymnasium import spaces

from wanderlust.algo.rollout import Rollout, merge_rollouts
from wanderlust.algo.worker import RolloutWorker, WorkerSpec, initial_specs
from wanderlust.runtime.config import TrainConfig

MAX_CONSECUTIVE_FAILURES = 3
"""A worker slot that fails this many times in a row within one collect ends the run (likely a bug, not a crash)."""
WORKER_TORCH_THREADS = 1
"""Torch threads of a worker in its own process: workers run side by side, one core each."""


class WorkerLost(Exception):
    """A worker died or failed while collecting; the pool replaces it."""


class WorkerPool(Protocol):
    """Rollout workers behind one call (see the module docstring for the contract)."""

    observation_space: spaces.Space
    """One env's observation space."""
    action_space: spaces.Space
    """One env's action space."""
    restarts: int
    """Workers replaced so far."""
    last_overhead_ms: float
    """Time of the last collect not spent inside the workers (transfer, scheduling), in ms."""

    def collect(self, weights: dict[str, np.ndarray], num_steps: int) -> Rollout: ...

    def close(self) -> None: ...


def collect_with_restarts(
    count: int, submit: Callable[[int], Any], wait: Callable[[Any], Rollout],
    replace: Callable[[int, WorkerLost], None], serial: bool = False,
) -> list[Rollout]:
    """Collect from worker slots ``0 .. count - 1``: ``submit(i)`` starts slot i's rollout (it never
    raises), ``wait(handle)`` returns it or raises :class:`WorkerLost`, after which
    ``replace(i, error)`` puts a fresh worker in the slot and its share is collected again.

    In parallel mode every slot is submitted before the first wait; ``serial`` submits slot i+1
    only after slot i returned. Raises RuntimeError after MAX_CONSECUTIVE_FAILURES failures of one slot.
    """
    handles: list[Any] = [None] * count if serial else [submit(i) for i in range(count)]
    rollouts = []
    for i in range(count):
        handle = handles[i] if not serial else submit(i)
        failures = 0
        while True:
            try:
                rollouts.append(wait(handle))
                break
            except WorkerLost as lost:
                failures += 1
                if failures >= MAX_CONSECUTIVE_FAILURES:
                    raise RuntimeError(f"rollout worker {i} failed {failures} times in a row; "
                                       f"last error: {last_line(lost)}") from lost
                replace(i, lost)
                handle = submit(i)
    return rollouts


def overhead_ms(elapsed: float, worker_seconds: list[float], serial: bool) -> float:
    """Collect time not spent inside workers: ``elapsed - max(worker time)`` (parallel) or ``- sum`` (serial)."""
    busy = sum(worker_seconds) if serial else max(worker_seconds)
    return max(0.0, elapsed - busy) * 1000.0


def last_line(error: BaseException, limit: int = 300) -> str:
    """The last non-empty line of an error's text (a traceback's exception line), shortened to ``limit``."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    line = lines[-1] if lines else type(error).__name__
    return line if len(line) <= limit else line[:limit - 3] + "..."


def warn_restart(index: int, error: WorkerLost, restarts: int) -> None:
    warnings.warn(f"rollout worker {index} lost ({last_line(error)}); replaced it with fresh envs "
                  f"({restarts} restart(s) so far)", RuntimeWarning, stacklevel=3)


def _serve(conn, config: TrainConfig, spec: WorkerSpec) -> None:
    """Subprocess main: build the worker, then answer pickled ``("collect", weights, T)`` messages."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the learner's to handle; it closes us
    try:
        worker = RolloutWorker(config, spec, torch_threads=WORKER_TORCH_THREADS)
    except Exception:
        conn.send(("error", traceback.format_exc()))
        return
    conn.send(("ready", (worker.spaces(), worker.pid())))
    try:
        while True:
            try:
                message = pickle.loads(conn.recv_bytes())
            except EOFError:  # the learner is gone
                return
            if message[0] == "close":
                return
            try:
                conn.send(("rollout", worker.collect(message[1], message[2])))
            except Exception:
                conn.send(("error", traceback.format_exc()))
                return
    finally:
        worker.close()


class _ProcessWorker:
    """A RolloutWorker in a spawned subprocess, spoken to through a pipe."""

    def __init__(self, config: TrainConfig, spec: WorkerSpec) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        # Not a daemon: a worker's envs may start processes of their own (vector_mode 'async').
        self.process = context.Process(target=_serve, args=(child, config, spec),
                                       name=f"wanderlust-worker-{spec.index}")
        self.process.start()
        child.close()
        self._lost: WorkerLost | None = None

    def ready(self) -> tuple[tuple, int]:
        """Wait until the worker is built: ``((observation space, action space), pid)``."""
        return self._receive("ready")

    def submit(self, message: bytes) -> "_ProcessWorker":
        try:
            self.conn.send_bytes(message)
        except OSError as error:  # the process is gone: report it at result time
            self._lost = WorkerLost(f"worker process {self.process.pid} is gone ({error})")
        return self

    def result(self) -> Rollout:
        if self._lost is not None:
            raise self._lost
        return self._receive("rollout")

    def _receive(self, expected: str):
        try:
            kind, payload = self.conn.recv()
        except (EOFError, OSError):
            self.process.join(timeout=1.0)
            raise WorkerLost(f"worker process {self.process.pid} died (exit code {self.process.exitcode})") from None
        if kind != expected:
            raise WorkerLost(payload)
        return payload

    def request_close(self) -> None:
        """Ask the worker to exit after its current command (non-blocking)."""
        try:
            self.conn.send_bytes(pickle.dumps(("close",)))
        except OSError:
            pass

    def close(self, deadline: float | None = None) -> None:
        """Wait for the exit until ``deadline`` (``time.monotonic()``; default 5 s from now), then kill."""
        self.request_close()
        self.process.join(max(0.0, (deadline or time.monotonic() + 5.0) - time.monotonic()))
        if self.process.is_alive():  # e.g. still busy with a rollout nobody will read (Ctrl-C)
            self.process.kill()
            self.process.join()
        self.conn.close()


class _InProcessWorker:
    """A RolloutWorker in this process (serial mode)."""

    def __init__(self, config: TrainConfig, spec: WorkerSpec) -> None:
        self.worker = RolloutWorker(config, spec)

    def collect(self, weights: dict[str, np.ndarray], num_steps: int) -> Rollout:
        try:
            return self.worker.collect(weights, num_steps)
        except Exception as error:  # an env crashed: replace the worker, as a dead process would be
            raise WorkerLost(f"{type(error).__name__}: {error}") from error

    def close(self, deadline: float | None = None) -> None:
        self.worker.close()


class LocalPool:
    """``W = config.workers`` workers on this machine: one subprocess each, or all in this process
    one after another when ``config.serial_workers``."""

    def __init__(self, config: TrainConfig, start_update: int = 0) -> None:
        self.config, self.serial = config, config.serial_workers
        self.specs = initial_specs(config.env.num_envs, config.workers, start_update)
        self.restarts, self.last_overhead_ms = 0, 0.0
        self._updates = start_update
        self._workers: list = []
        try:
            for spec in self.specs:  # processes build their envs in parallel
                self._workers.append(self._start(spec))
            first = self._workers[0]
            if self.serial:
                self.observation_space, self.action_space = first.worker.spaces()
            else:
                (self.observation_space, self.action_space), _ = first.ready()
                for worker in self._workers[1:]:
                    worker.ready()
        except BaseException as error:
            self.close()
            if isinstance(error, WorkerLost):
                raise RuntimeError(f"rollout workers could not start: {last_line(error)}") from None
            raise

    def _start(self, spec: WorkerSpec):
        return _InProcessWorker(self.config, spec) if self.serial else _ProcessWorker(self.config, spec)

    def worker_pids(self) -> list[int]:
        """OS process of every worker (this process's pid in serial mode)."""
        return [w.worker.pid() if self.serial else w.process.pid for w in self._workers]

    def collect(self, weights: dict[str, np.ndarray], num_steps: int) -> Rollout:
        start = time.perf_counter()
        if self.serial:
            rollouts = collect_with_restarts(
                len(self._workers), submit=lambda i: i, wait=lambda i: self._workers[i].collect(weights, num_steps),
                replace=self._replace, serial=True,
            )
        else:
            message = pickle.dumps(("collect", weights, num_steps), protocol=pickle.HIGHEST_PROTOCOL)  # once for all
            rollouts = collect_with_restarts(
                len(self._workers), submit=lambda i: self._workers[i].submit(message),
                wait=lambda worker: worker.result(), replace=self._replace,
            )
        self._updates += 1
        self.last_overhead_ms = overhead_ms(time.perf_counter() - start, [r.seconds for r in rollouts], self.serial)
        return merge_rollouts(rollouts)

    def _replace(self, index: int, error: WorkerLost) -> None:
        self.restarts += 1
        warn_restart(index, error, self.restarts)
        try:
            self._workers[index].close()
        except Exception:  # noqa: BLE001  (the envs of a crashed worker may not close cleanly)
            pass
        self.specs[index] = self.specs[index].replacement(self._updates)
        try:
            self._workers[index] = self._start(self.specs[index])
            if not self.serial:
                self._workers[index].ready()
        except Exception as failed:
            raise RuntimeError(f"could not replace rollout worker {index}: {last_line(failed)}") from failed

    def close(self) -> None:
        if not self.serial:
            for worker in self._workers:
                worker.request_close()  # all at once: they exit side by side
        deadline = time.monotonic() + 5.0
        for worker in self._workers:
            worker.close(deadline)
        self._workers = []


def make_pool(config: TrainConfig, start_update: int = 0) -> WorkerPool:
    """The pool ``config`` asks for: Ray actors when ``ray_address`` is set, else local workers."""
    if config.ray_address is not None:
        from wanderlust.algo.ray_pool import RayPool

        return RayPool(config, start_update)
    return LocalPool(config, start_update)
