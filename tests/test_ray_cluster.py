"""Starting and joining Ray securely, without starting Ray: commands, environment, addresses, errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from wanderlust.runtime import ray_cluster
from wanderlust.runtime.ray_cluster import (
    HeadPorts, apply_environment, descendants, head_command, is_loopback, ray_environment, split_address,
)


def test_head_command_binds_loopback_with_no_dashboard_and_fixed_private_ports():
    command = head_command("python", HeadPorts(gcs=6400, client=6401, agent=6402), num_cpus=2,
                           temp_dir=Path("/tmp/x/ray"), object_store_bytes=100_000_000)
    assert command[:6] == ["python", "-m", "ray.scripts.scripts", "start", "--head", "--block"]
    for flag in ("--node-ip-address=127.0.0.1", "--port=6400", "--ray-client-server-port=6401",
                 "--dashboard-agent-listen-port=6402", "--num-cpus=2", "--temp-dir=/tmp/x/ray",
                 "--include-dashboard=false", "--object-store-memory=100000000", "--disable-usage-stats"):
        assert flag in command
    assert not any(flag.startswith("--dashboard-host") for flag in command)


def test_an_opted_in_dashboard_listens_on_loopback():
    command = head_command("python", HeadPorts(1, 2, 3, dashboard=8300), num_cpus=1, temp_dir=Path("/t"))
    assert {"--include-dashboard=true", "--dashboard-host=127.0.0.1", "--dashboard-port=8300"} <= set(command)
    assert not any(flag.startswith("--object-store-memory") for flag in command)


def test_environment_keeps_token_auth_on_and_ray_on_loopback():
    env = ray_environment(Path("/private/auth_token"), loopback=True)
    assert env == {"RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_TOKEN_PATH": "/private/auth_token",
                   "RAY_AUTH_TOKEN": None, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    joined = ray_environment(None, loopback=False)  # a real cluster: your token, Ray's own node IP
    assert joined == {"RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0"}
    target = apply_environment(env, {"RAY_AUTH_TOKEN": "someone else's", "PATH": "/bin"})
    assert "RAY_AUTH_TOKEN" not in target and target["PATH"] == "/bin" and target["RAY_AUTH_MODE"] == "token"


@pytest.mark.parametrize("address, expected", [
    ("10.0.0.5:6379", ("10.0.0.5", 6379)), ("head.example:6379", ("head.example", 6379)), ("[::1]:6380", ("::1", 6380)),
])
def test_addresses_split_into_host_and_port(address, expected):
    assert split_address(address) == expected


@pytest.mark.parametrize("address", ["10.0.0.5", "10.0.0.5:port", ":6379", "10.0.0.5:70000"])
def test_bad_addresses_are_refused(address):
    with pytest.raises(ValueError, match="HOST:PORT"):
        split_address(address)


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True), ("::1", True), ("10.0.0.5", False),
    ("head.example", False),
])
def test_loopback_hosts_are_recognised(host, loopback):
    assert is_loopback(host) is loopback


def test_descendants_walk_the_whole_process_tree():
    parents = {10: 1, 11: 10, 12: 10, 13: 11, 20: 1, 21: 20}
    assert descendants(parents, 10) == [11, 12, 13]
    assert descendants(parents, 13) == []


def test_a_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(RuntimeError, match=r'pip install "wanderlust\[ray\]"'):
        ray_cluster.import_ray()
    monkeypatch.setattr(ray_cluster.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(RuntimeError, match=r'pip install "wanderlust\[ray\]"'):
        ray_cluster.LocalRayCluster.start(num_cpus=1)


def test_joining_with_token_auth_disabled_is_refused(monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    with pytest.raises(ValueError, match="only with token authentication"):
        ray_cluster.connect("10.0.0.5:6379")


def test_free_ports_avoid_rays_worker_port_range(monkeypatch):
    picks = iter([15000, 10002, 41000])

    class Probe:
        def __init__(self, *args):
            self.port = next(picks)

        def __enter__(self):
            return self

        def __exit__(self, *args):
            return False

        def bind(self, address):
            assert address == ("127.0.0.1", 0)

        def getsockname(self):
            return ("127.0.0.1", self.port)

    monkeypatch.setattr(ray_cluster.socket, "socket", Probe)
    assert ray_cluster.free_port() == 41000


class FakeAuthenticationError(Exception):
    pass


def _chained(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as caught:
            raise outer from caught
    except BaseException as raised:
        return raised


def test_token_failures_are_recognised_in_rays_exception_chains():
    wrong = _chained(ConnectionError("Failed to connect to Ray cluster at 10.0.0.5:6379"),
                     RuntimeError("Failed to connect to GCS. Last connection error: ... InvalidAuthToken: ..."))
    assert ray_cluster._auth_failure(wrong, FakeAuthenticationError) == "the token is missing or incorrect"
    missing = FakeAuthenticationError("Token authentication is enabled but no authentication token was found. More")
    assert ray_cluster._auth_failure(missing, FakeAuthenticationError) == (
        "Token authentication is enabled but no authentication token was found")
    unreachable = _chained(ConnectionError("Failed to connect"), RuntimeError("GCS did not answer in 60 s"))
    assert ray_cluster._auth_failure(unreachable, FakeAuthenticationError) is None
