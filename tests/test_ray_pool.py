"""A real two-node Ray cluster on loopback: security (loopback only, token required), the Ray pool
trains exactly like the serial local pool, and a killed worker actor is replaced mid-run.

The head is started the way ``--ray local`` starts it (:class:`LocalRayCluster`: ``ray start --head
--block`` on 127.0.0.1 with token auth); a second node joins it as its own process tree. Everything
is torn down by pid (never ``ray stop``, which would stop every Ray process on the machine).
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from wanderlust.algo.pool import make_pool
from wanderlust.algo.trainer import train
from wanderlust.runtime.checkpoint import checkpoint_name, load_checkpoint
from wanderlust.runtime.ray_cluster import LOOPBACK, LocalRayCluster, descendants, process_parents

pytestmark = pytest.mark.timeout(240)

# `ray start --address` cannot join a loopback head: Ray's CLI replaces 127.0.0.1 by the machine's IP
# for non-head nodes. The second node is therefore started the way Ray's own multi-node tests do
# (ray.cluster_utils): a Node with node_ip_address 127.0.0.1, in its own process, until SIGTERM.
NODE_LAUNCHER = """
import signal, sys
from ray._private.node import Node
from ray._private.parameter import RayParams
params = RayParams(node_ip_address="127.0.0.1", gcs_address=sys.argv[1], temp_dir=sys.argv[2], num_cpus=1,
                   object_store_memory=int(sys.argv[3]), include_log_monitor=False, node_manager_port=0)
params.dashboard_agent_listen_port = None
node = Node(params, head=False, shutdown_at_exit=True, spawn_reaper=True)
print("NODE UP", flush=True)
signal.sigwait([signal.SIGTERM, signal.SIGINT])
node.kill_all_processes(check_alive=False, allow_graceful=True)
"""
OBJECT_STORE_BYTES = 100 * 2**20


class TwoNodeCluster:
    def __init__(self, head: LocalRayCluster, node: subprocess.Popen) -> None:
        self.head, self.node = head, node

    def pids(self) -> list[int]:
        return [*self.head.pids(), self.node.pid, *descendants(process_parents(), self.node.pid)]


def _start_second_node(head: LocalRayCluster) -> subprocess.Popen:
    log = open(head.temp_dir / "node.log", "wb")
    node = subprocess.Popen([sys.executable, "-c", NODE_LAUNCHER, head.address, str(head.ray_temp_dir(head.temp_dir)),
                             str(OBJECT_STORE_BYTES)],
                            env=head.child_environment(head.token_path), stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while b"NODE UP" not in (head.temp_dir / "node.log").read_bytes():
        if node.poll() is not None or time.monotonic() > deadline:
            node.kill()
            raise RuntimeError("second node did not start: " + (head.temp_dir / "node.log").read_text()[-2000:])
        time.sleep(0.1)
    return node


@pytest.fixture(scope="module")
def cluster():
    saved = {name: os.environ.get(name) for name in
             ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER",
              "RAY_USAGE_STATS_ENABLED")}
    head = LocalRayCluster.start(num_cpus=1, object_store_bytes=OBJECT_STORE_BYTES)
    node = None
    try:
        node = _start_second_node(head)
        os.environ["RAY_AUTH_TOKEN_PATH"] = str(head.token_path)  # where a user puts the head's token
        yield TwoNodeCluster(head, node)
    finally:
        started = TwoNodeCluster(head, node).pids() if node is not None else head.pids()
        if node is not None:
            node.terminate()
            try:
                node.wait(30)
            except subprocess.TimeoutExpired:
                node.kill()
        head.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        time.sleep(0.5)
        alive = [pid for pid in started if _alive(pid)]
        for pid in alive:  # ours: clean up before failing
            os.kill(pid, signal.SIGKILL)
        assert not alive, f"Ray processes left running: {alive}"
        assert not head.temp_dir.exists()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def _listening_addresses(pids: list[int]) -> set[tuple[str, int]]:
    """(ip, port) of every TCP socket in LISTEN state owned by ``pids`` (from /proc)."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A = LISTEN
                found.add(_decode(local))
    return found


def _decode(hex_address: str) -> tuple[str, int]:
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # kernel order: 32-bit words, little-endian
    address = ipaddress.ip_address(raw)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address), int(port, 16)


def test_ray_local_starts_a_private_cluster_with_a_token_guarded_dashboard_and_stops_it(tiny, tmp_path, monkeypatch):
    """``--ray local --ray-dashboard``: runs before the shared cluster exists (one Ray connection per process)."""
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"):
        monkeypatch.setenv(name, "placeholder")  # restored after the test: connect() changes them
        monkeypatch.delenv(name)
    seen = {}

    def inspect(learner, metrics):
        cluster = pools[0].cluster
        seen["pids"], seen["temp_dir"] = cluster.pids(), cluster.temp_dir
        seen["addresses"] = _listening_addresses(seen["pids"])
        url, token = cluster.dashboard_url + "/api/version", cluster.token_path.read_text()
        seen["dashboard"] = url
        seen["without_token"] = _http_status(url, {})
        seen["with_token"] = _http_status(url, {"Authorization": f"Bearer {token}"})

    pools = []

    def factory(config, start_update):
        pools.append(make_pool(config, start_update))
        return pools[-1]

    config = tiny(workers=2, ray_address="local", ray_dashboard=True, total_steps=32)
    result = train(config, tmp_path, show_progress=False, on_update=inspect, pool_factory=factory)
    assert result.updates == 1
    dashboard_port = int(seen["dashboard"].split(":")[2].split("/")[0])
    assert (LOOPBACK, dashboard_port) in seen["addresses"]
    assert all(ipaddress.ip_address(host).is_loopback for host, _ in seen["addresses"]), seen["addresses"]
    assert (seen["without_token"], seen["with_token"]) == (401, 200)
    time.sleep(0.5)
    assert not [pid for pid in seen["pids"] if _alive(pid)], "the private cluster outlived its run"
    assert not seen["temp_dir"].exists()


def _http_status(url: str, headers: dict[str, str]) -> int:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_cluster_listens_on_loopback_only(cluster):
    addresses = _listening_addresses(cluster.pids())
    gcs_port = int(cluster.head.address.rsplit(":", 1)[1])
    assert (LOOPBACK, gcs_port) in addresses
    assert len(addresses) >= 6  # GCS, two raylets, agents...: the scan sees the whole cluster
    exposed = sorted(a for a in addresses if not ipaddress.ip_address(a[0]).is_loopback)
    assert not exposed, f"Ray listens beyond loopback: {exposed}"
    assert oct(cluster.head.token_path.stat().st_mode & 0o777) == "0o600"
    assert oct(cluster.head.temp_dir.stat().st_mode & 0o777) == "0o700"


def test_the_cluster_answers_only_requests_with_its_token(cluster):
    """A raw gRPC call to the GCS (what ray.init does first): refused without the token or with a
    wrong one, answered with it."""
    import grpc  # a Ray dependency

    with grpc.insecure_channel(cluster.head.address) as channel:
        get_cluster_id = channel.unary_unary("/ray.rpc.NodeInfoGcsService/GetClusterId",
                                             request_serializer=lambda raw: raw, response_deserializer=lambda raw: raw)
        for metadata in (None, [("authorization", "Bearer " + "0" * 64)]):
            with pytest.raises(grpc.RpcError) as refused:
                get_cluster_id(b"", metadata=metadata, timeout=10)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        token = cluster.head.token_path.read_text()
        assert len(get_cluster_id(b"", metadata=[("authorization", f"Bearer {token}")], timeout=10)) > 0


def _ray_config(tiny, cluster, **changes):
    return tiny(workers=2, ray_address=cluster.head.address, **changes)


class RecordingPool:
    """A pool that keeps every rollout it returns."""

    def __init__(self, pool) -> None:
        self.pool, self.rollouts = pool, []

    def __getattr__(self, name):
        return getattr(self.pool, name)

    def collect(self, weights, num_steps):
        self.rollouts.append(self.pool.collect(weights, num_steps))
        return self.rollouts[-1]


@pytest.mark.parametrize("serial", [False, True], ids=["parallel", "serial"])
def test_ray_workers_collect_and_train_exactly_like_the_serial_local_pool(cluster, tiny, tmp_path, serial):
    pools, nodes = {}, []

    def recording(name):
        def factory(config, start_update):
            pools[name] = RecordingPool(make_pool(config, start_update))
            if config.ray_address is not None:
                head = set(cluster.head.pids())
                nodes.append({"head" if pid in head else "second" for pid in pools[name].worker_pids()})
            return pools[name]
        return factory

    train(tiny(workers=2, serial_workers=True), tmp_path / "local", show_progress=False, pool_factory=recording("local"))
    train(_ray_config(tiny, cluster, serial_workers=serial), tmp_path / "ray", show_progress=False,
          pool_factory=recording("ray"))
    assert nodes == [{"head", "second"}]  # one actor per node: a real multi-node run
    assert len(pools["ray"].rollouts) == 2
    for local_rollout, ray_rollout in zip(pools["local"].rollouts, pools["ray"].rollouts):
        for field in ("obs", "last_obs", "final_obs", "actions", "env_actions", "log_probs", "rewards",
                      "terminated", "truncated"):
            assert np.array_equal(getattr(local_rollout, field), getattr(ray_rollout, field)), field
        assert local_rollout.episode_coverages == ray_rollout.episode_coverages
    local, ray = (load_checkpoint(tmp_path / d / "checkpoints" / checkpoint_name(64)) for d in ("local", "ray"))
    assert local["config"] != ray["config"]  # ray_address, serial_workers: the only differences
    for state in (local, ray):  # Python's global `random` also serves Ray's driver; training never reads it
        del state["config"], state["rng"]["python"]
    compared = _assert_same(local, ray, "state")
    assert compared > 20  # agent, optimizer moments, novelty nets, normalizer, RNG states
    timing = ("time", "charts/SPS", "charts/rollout_overhead_ms")
    curves = [[{k: v for k, v in json.loads(line).items() if k not in timing}
               for line in (tmp_path / d / "metrics.jsonl").read_text().splitlines()] for d in ("local", "ray")]
    assert curves[0] == curves[1]


def _assert_same(a, b, path: str) -> int:
    """Assert two checkpoint states are identical, bit for bit; returns the number of tensors/arrays compared."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        return sum(_assert_same(a[key], b[key], f"{path}.{key}") for key in a)
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), path
        return sum(_assert_same(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b)))
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), path
        return 1
    if isinstance(a, np.ndarray):
        assert np.array_equal(a, b), path
        return 1
    assert a == b, path
    return 0


def test_a_killed_worker_actor_is_replaced_and_the_run_finishes(cluster, tiny, tmp_path):
    pools, pids = [], []

    def factory(config, start_update):
        pools.append(make_pool(config, start_update))
        return pools[-1]

    def kill_one(learner, metrics):
        pids.append(pools[0].worker_pids())
        if learner.updates == 1:
            os.kill(pids[0][1], signal.SIGKILL)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = train(_ray_config(tiny, cluster, total_steps=96), tmp_path, show_progress=False, on_update=kill_one,
                       pool_factory=factory)
    assert result.updates == 3 and result.global_step == 96 and not result.interrupted
    assert pids[1][0] == pids[0][0] and pids[1][1] != pids[0][1]  # only the killed actor was replaced
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [32, 64, 96]
    assert [line["charts/worker_restarts"] for line in lines] == [0.0, 1.0, 1.0]
    assert any("rollout worker 1 lost (ActorDiedError" in str(w.message) for w in caught)
    assert load_checkpoint(tmp_path / "checkpoints")["updates"] == 3
