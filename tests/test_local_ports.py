"""The port a local Ray without dashboard records as its dashboard's: free, and never one the system hands out."""

from __future__ import annotations

import socket

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
