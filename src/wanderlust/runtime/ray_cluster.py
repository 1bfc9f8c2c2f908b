"""Ray, securely: a private loopback cluster that wanderlust starts, or joining one with a token.

Ray executes code sent to its ports, so wanderlust never opens them to the network:

- **Token authentication stays on** (Ray >= 2.52): ``RAY_AUTH_MODE=token`` for every Ray process
  wanderlust starts and for this driver; a cluster wanderlust starts gets a fresh random token
  (256 bits, as ``ray get-auth-token --generate``) in a 0600 file of its private 0700 temp folder,
  passed as ``RAY_AUTH_TOKEN_PATH`` (nothing is written to ``~/.ray``). Joining a cluster uses the
  token you provide (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``);
  ``RAY_AUTH_MODE`` set to anything but ``token`` is refused.
- **Loopback only.** ``ray start --node-ip-address 127.0.0.1`` alone is not enough on Linux: Ray
  replaces a loopback address by the machine's reachable IP and its servers then listen on all
  interfaces. With ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (Ray's single-machine mode, the default
  on macOS and Windows) the node IP stays 127.0.0.1 and every Ray server binds 127.0.0.1
  (``tests/test_ray_pool.py`` checks every listening socket of the cluster). The same variable is
  set for this driver when it connects to a loopback address, so Ray does not rewrite it either.
- **Dashboard off** unless asked for (``--ray-dashboard``), and then on 127.0.0.1 only.

The env vars must be in place before ``import ray`` (Ray reads them at import), so import Ray
only through :func:`connect` / :func:`import_ray`.
"""

from __future__ import annotations

import ctypes
import importlib.util
import ipaddress
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

LOOPBACK = "127.0.0.1"
MIN_RAY_VERSION = (2, 52)
"""The first Ray release with token authentication."""
SINGLE_MACHINE_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""'0' keeps Ray's node IP at 127.0.0.1 (its single-machine mode), so its servers bind loopback only."""
INSTALL_HINT = 'Ray is not installed: pip install "wanderlust[ray]"'
STARTED_MARKER = b"Ray runtime started"


def import_ray():
    """``import ray`` with a one-line error naming the extra when it is missing or too old."""
    try:
        import ray
    except ImportError:
        raise RuntimeError(INSTALL_HINT) from None
    version = tuple(int(part) for part in ray.__version__.split(".")[:2] if part.isdigit())
    if version < MIN_RAY_VERSION:
        raise RuntimeError(f"Ray {ray.__version__} has no token authentication; "
                           f'pip install "ray[default]>={".".join(map(str, MIN_RAY_VERSION))}"')
    return ray


def split_address(address: str) -> tuple[str, int]:
    """``'10.0.0.5:6379' -> ('10.0.0.5', 6379)``; ``'[::1]:6379' -> ('::1', 6379)``."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"Ray address must be HOST:PORT, got '{address}'")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def ray_environment(token_path: Path | None, loopback: bool) -> dict[str, str | None]:
    """Variables that Ray processes and the driver need (``None``: remove the variable).

    Token auth on; with ``token_path`` the token comes from that file (an inherited
    ``RAY_AUTH_TOKEN`` would take precedence, so it is removed); ``loopback`` keeps Ray on 127.0.0.1.
    """
    env: dict[str, str | None] = {"RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0"}
    if token_path is not None:
        env["RAY_AUTH_TOKEN_PATH"] = str(token_path)
        env["RAY_AUTH_TOKEN"] = None
    if loopback:
        env[SINGLE_MACHINE_ENV] = "0"
    return env


def apply_environment(env: dict[str, str | None], target: dict | None = None) -> dict:
    """Set / remove ``env``'s variables in ``target`` (default ``os.environ``); returns the target."""
    target = os.environ if target is None else target
    for name, value in env.items():
        if value is None:
            target.pop(name, None)
        else:
            target[name] = value
    return target


def connect(address: str, token_path: Path | None = None):
    """Connect this process to the Ray cluster at ``address`` with token auth; returns the ray module.

    ``token_path``: the token file of a cluster wanderlust started; None uses the token you set up.
    Changes this process's environment (Ray's token loader reads it).
    """
    host, _ = split_address(address)
    mode = os.environ.get("RAY_AUTH_MODE")
    if mode not in (None, "", "token"):
        raise ValueError(f"wanderlust uses Ray only with token authentication; RAY_AUTH_MODE is '{mode}': "
                         "unset it or set it to 'token'")
    loopback = is_loopback(host)
    already_imported = "ray" in sys.modules
    apply_environment(ray_environment(token_path, loopback))
    ray = import_ray()
    if loopback and already_imported and _rewrites_loopback(ray):
        raise RuntimeError(f"ray was imported before wanderlust could keep it on loopback; run with "
                           f"{SINGLE_MACHINE_ENV}=0 or in a fresh process")
    if ray.is_initialized():
        ray.shutdown()
    _reload_auth_settings()
    try:
        ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
    except (ray.exceptions.AuthenticationError, ConnectionError) as error:
        refused = _auth_failure(error, ray.exceptions.AuthenticationError)
        if refused is not None:  # a missing token, or the wrong one
            raise RuntimeError(f"the Ray cluster at {address} refused this driver: {refused}; "
                               "see docs/ray.md, 'Joining a real cluster safely'") from None
        raise RuntimeError(f"cannot connect to the Ray cluster at {address}: {_first_sentence(error)}") from None
    return ray


def _auth_failure(error: BaseException | None, kind: type) -> str | None:
    """Why the cluster refused us, if an exception in ``error``'s chain is a token failure (Ray
    reports a wrong token as text inside a RuntimeError, a missing one as AuthenticationError)."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, kind):
            return _first_sentence(error)
        if "InvalidAuthToken" in str(error):
            return "the token is missing or incorrect"
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _first_sentence(error: BaseException) -> str:
    text = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return text.split(". ")[0].removeprefix("RPC error: ")


def _rewrites_loopback(ray) -> bool:
    """True when the imported Ray turns 127.0.0.1 into the machine's IP (multi-node mode)."""
    constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
    return bool(getattr(constants, "ENABLE_RAY_CLUSTER", False))


def _reload_auth_settings() -> None:
    """Make Ray re-read RAY_AUTH_MODE and the token (it caches both per process)."""
    try:
        from ray._raylet import AuthenticationTokenLoader, Config
    except ImportError:
        return
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


RAY_WORKER_PORTS = range(10002, 20000)
"""Ray's default port range for worker processes; Ray refuses other ports inside it."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now, outside Ray's worker port range."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((LOOPBACK, 0))
            port = probe.getsockname()[1]
        if port not in RAY_WORKER_PORTS:
            return port


@dataclass(frozen=True)
class HeadPorts:
    """The fixed ports of a head node (Ray picks free ones for everything else)."""

    gcs: int
    """The cluster address's port (GCS)."""
    client: int
    """Ray client server (default 10001: two clusters on one machine would collide)."""
    agent: int
    """Dashboard agent HTTP port (default 52365, same reason)."""
    dashboard: int | None = None
    """Dashboard HTTP port, or None for no dashboard."""


def head_command(python: str, ports: HeadPorts, num_cpus: int, temp_dir: Path,
                 object_store_bytes: int | None = None) -> list[str]:
    """``ray start --head --block`` on loopback; run it with :func:`ray_environment` (loopback=True)."""
    command = [
        python, "-m", "ray.scripts.scripts", "start", "--head", "--block", f"--node-ip-address={LOOPBACK}",
        f"--port={ports.gcs}", f"--ray-client-server-port={ports.client}",
        f"--dashboard-agent-listen-port={ports.agent}", f"--num-cpus={num_cpus}", f"--temp-dir={temp_dir}",
        "--disable-usage-stats",
    ]
    if ports.dashboard is None:
        command.append("--include-dashboard=false")
    else:
        command += ["--include-dashboard=true", f"--dashboard-host={LOOPBACK}", f"--dashboard-port={ports.dashboard}"]
    if object_store_bytes is not None:
        command.append(f"--object-store-memory={object_store_bytes}")
    return command


def descendants(parents: dict[int, int], root: int) -> list[int]:
    """Every process below ``root`` in a ``{pid: parent pid}`` table, parents before children."""
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found, frontier = [], [root]
    while frontier:
        below = [child for pid in frontier for child in sorted(children.get(pid, []))]
        found += below
        frontier = below
    return found


def _stat_fields(pid: int) -> list[str] | None:
    """Fields 3.. of /proc/PID/stat (after the name, which may contain spaces), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except (OSError, ValueError):
        return None


def process_parents() -> dict[int, int]:
    """``{pid: parent pid}`` of every process, from /proc (empty where there is no /proc)."""
    table = {}
    for entry in Path("/proc").glob("[0-9]*"):
        fields = _stat_fields(int(entry.name))
        if fields is not None:
            table[int(entry.name)] = int(fields[1])
    return table


def process_start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), to tell it from a later process with the same pid."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields is not None else None


def _die_with_parent() -> None:  # pragma: no cover  (runs in the child before exec)
    """Linux: SIGTERM the head when wanderlust dies, even by SIGKILL, so no cluster is left behind.

    (The kernel sends it when the *thread* that started the head exits: start clusters from a
    thread that lives as long as the run, as ``train`` does from the caller's thread.)"""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class LocalRayCluster:
    """A private single-machine Ray cluster: loopback, token auth, its own temp folder."""

    address: str
    """``127.0.0.1:PORT`` to pass to :func:`connect`."""
    temp_dir: Path
    """0700 folder with the token, ``head.log`` and Ray's own temp folder ``ray/`` (which Ray makes
    world-writable: the private parent keeps other users out); removed by :meth:`stop`."""
    token_path: Path
    """0600 file holding the cluster's auth token."""
    process: subprocess.Popen
    """The ``ray start --head --block`` process (its children are the cluster)."""
    dashboard_url: str | None = None
    """``http://127.0.0.1:PORT`` when started with the dashboard."""

    @classmethod
    def start(cls, num_cpus: int, object_store_bytes: int | None = None, dashboard: bool = False,
              timeout: float = 90.0) -> "LocalRayCluster":
        """Start the head node and wait until it is up (a few seconds)."""
        if num_cpus < 1:
            raise ValueError(f"a Ray cluster needs num_cpus >= 1, got {num_cpus}")
        if importlib.util.find_spec("ray") is None:  # not imported here: connect() must import it first
            raise RuntimeError(INSTALL_HINT)
        temp_dir = Path(tempfile.mkdtemp(prefix="wanderlust-ray-"))
        token_path = temp_dir / "auth_token"
        descriptor = os.open(token_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as token_file:
            token_file.write(secrets.token_hex(32))
        ports = HeadPorts(free_port(), free_port(), free_port(), free_port() if dashboard else None)
        log_path = temp_dir / "head.log"
        env = cls.child_environment(token_path)
        # Two metrics servers have fixed default ports: move them too, so that clusters do not collide.
        env.update(AUTOSCALER_METRIC_PORT=str(free_port()), DASHBOARD_METRIC_PORT=str(free_port()))
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                head_command(sys.executable, ports, num_cpus, cls.ray_temp_dir(temp_dir), object_store_bytes),
                env=env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            )
        dashboard_url = f"http://{LOOPBACK}:{ports.dashboard}" if ports.dashboard else None
        cluster = cls(f"{LOOPBACK}:{ports.gcs}", temp_dir, token_path, process, dashboard_url)
        deadline = time.monotonic() + timeout
        while STARTED_MARKER not in log_path.read_bytes():
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log_path.read_bytes()[-1500:].decode(errors="replace").strip().splitlines()
                cluster.stop()
                why = f"exited with code {process.returncode}" if process.returncode is not None else "timed out"
                raise RuntimeError(f"starting a local Ray cluster {why}: {tail[-1] if tail else 'no output'}")
            time.sleep(0.1)
        return cluster

    @staticmethod
    def ray_temp_dir(temp_dir: Path) -> Path:
        """Ray's ``--temp-dir`` inside the private folder (nodes joining this cluster use it too)."""
        return temp_dir / "ray"

    @staticmethod
    def child_environment(token_path: Path) -> dict[str, str]:
        """This process's environment with the cluster's token and loopback settings (for Ray processes)."""
        env = apply_environment(ray_environment(token_path, loopback=True), dict(os.environ))
        env.pop("RAY_ADDRESS", None)  # a user's default cluster must not redirect the head
        return env

    def pids(self) -> list[int]:
        """The head process and everything it started (Linux)."""
        return [self.process.pid, *descendants(process_parents(), self.process.pid)]

    def stop(self, timeout: float = 20.0) -> None:
        """Stop the head (it stops its children), kill what is left of its process tree, remove the folder."""
        tree = {pid: process_start_time(pid) for pid in self.pids()[1:]}
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pid, started in tree.items():
            if started is None or process_start_time(pid) != started:
                continue  # gone (or its pid now belongs to another process)
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        shutil.rmtree(self.temp_dir, ignore_errors=True)
