"""Joining a cluster: the address is parsed to where ray.init connects first, and a dead address fails in seconds."""

from __future__ import annotations

import socket

import pytest

from raysweep.core.errors import UsageError
from raysweep.runtime.cluster import GCS_PORT, RAY_CLIENT_PORT, bootstrap_endpoint, check_reachable, join


@pytest.fixture
def closed_port() -> int:
    """A localhost port that nothing listens on: bound once to get a free number, then closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def listening_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.mark.parametrize(
    ("address", "endpoint"),
    [
        ("head:6380", ("head", 6380)),
        ("10.0.0.5", ("10.0.0.5", GCS_PORT)),
        ("ray://head:10002", ("head", 10002)),
        ("ray://head", ("head", RAY_CLIENT_PORT)),
        ("ray://head:10001/", ("head", 10001)),
        ("[::1]:6379", ("::1", 6379)),
        ("auto", None),
    ],
)
def test_bootstrap_endpoint_is_the_gcs_or_the_ray_client_server(address, endpoint):
    assert bootstrap_endpoint(address) == endpoint


@pytest.mark.parametrize("address", ["head:abc", "head:0", "head:70000", ":6379", "ray://"])
def test_a_malformed_address_names_the_form_expected(address):
    with pytest.raises(UsageError, match="expected HOST:PORT or ray://HOST:PORT"):
        bootstrap_endpoint(address)


def test_a_port_nothing_listens_on_is_refused_naming_address_and_what_to_check(closed_port):
    with pytest.raises(UsageError) as e:
        check_reachable(f"127.0.0.1:{closed_port}")
    message = str(e.value)
    assert f"Ray cluster 127.0.0.1:{closed_port}: nothing answers" in message
    assert "ray status" in message and "the GCS port (6379)" in message
    assert "\n" not in message


def test_a_ray_client_address_points_at_the_client_server_port(closed_port):
    with pytest.raises(UsageError, match=r"the Ray Client server port \(10001\)"):
        check_reachable(f"ray://127.0.0.1:{closed_port}")


def test_a_listening_port_passes_the_probe(listening_port):
    check_reachable(f"127.0.0.1:{listening_port}")
    check_reachable("auto")  # Ray resolves it itself: nothing to probe


def test_join_probes_before_ray_init_so_a_dead_address_does_not_hang(closed_port):
    with pytest.raises(UsageError, match="nothing answers"):
        join(f"127.0.0.1:{closed_port}")
