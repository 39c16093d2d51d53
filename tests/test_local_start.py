"""Starting a local Ray: the port it records as its dashboard's without one (free, never one the system hands out),
and a start whose raylet missed Ray's registration wait, tried once more."""

from __future__ import annotations

import socket

import pytest

from raysweep.runtime import cluster
from raysweep.runtime.cluster import free_port_outside_ephemeral


def test_the_port_is_free_and_below_the_ephemeral_range(tmp_path, monkeypatch):
    ports = tmp_path / "ip_local_port_range"
    ports.write_text("40000\t60999\n")
    monkeypatch.setattr(cluster, "EPHEMERAL_RANGE", ports)
    for _ in range(20):
        port = free_port_outside_ephemeral()
        assert 40000 - 8192 <= port < 40000
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # still free


def test_without_the_range_it_is_any_free_port(tmp_path, monkeypatch):
    monkeypatch.setattr(cluster, "EPHEMERAL_RANGE", tmp_path / "missing")
    port = free_port_outside_ephemeral()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_a_start_whose_raylet_timed_out_is_ended_and_tried_once_more(monkeypatch, capsys):
    calls = []

    def start(*args):
        calls.append("start")
        if calls.count("start") == 1:
            raise Exception("The current node timed out during startup. This could happen because ...")

    monkeypatch.setattr(cluster, "start_local_instance", start)
    monkeypatch.setattr(cluster, "shutdown", lambda: calls.append("shutdown"))
    cluster.start_local(2, dashboard=False)
    assert calls == ["start", "shutdown", "start"]
    assert "did not start within Ray's 30 s" in capsys.readouterr().err


def test_other_start_failures_and_a_second_timeout_are_raised(monkeypatch):
    def refused(*args):
        raise ValueError("something else")

    monkeypatch.setattr(cluster, "start_local_instance", refused)
    monkeypatch.setattr(cluster, "shutdown", lambda: pytest.fail("nothing to retry"))
    with pytest.raises(ValueError, match="something else"):
        cluster.start_local(2, dashboard=False)

    def timed_out(*args):
        raise Exception("The current node timed out during startup.")

    monkeypatch.setattr(cluster, "start_local_instance", timed_out)
    monkeypatch.setattr(cluster, "shutdown", lambda: None)
    with pytest.raises(Exception, match="timed out during startup"):
        cluster.start_local(2, dashboard=False)
