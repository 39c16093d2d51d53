"""The embedded default's local Ray takes no orders from the network: every port Ray listens on is on
loopback, and a driver without its token is refused (tried over loopback, the only way in)."""

from __future__ import annotations

import ipaddress
import os
import signal
import subprocess
import sys

import psutil

from tests.integration.conftest import REPO, Run

# A Ray driver of another process, without raysweep's settings, joining the GCS at sys.argv[1].
INTRUDER = """
import sys, ray
try:
    ray.init(address=sys.argv[1], logging_level="ERROR")
except Exception as e:
    print("refused:", type(e).__name__)
    raise SystemExit(3)
print("joined; ran", ray.get(ray.remote(lambda: 6 * 7).remote()))
"""


def listening(pids: set[int]) -> list[tuple[str, int, str]]:
    found = []
    for conn in psutil.net_connections("inet"):
        if conn.status == psutil.CONN_LISTEN and conn.pid in pids:
            found.append((conn.laddr.ip, conn.laddr.port, psutil.Process(conn.pid).name()))
    return found


def is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    return address.is_loopback or bool(getattr(address, "ipv4_mapped", None) and address.ipv4_mapped.is_loopback)


def test_the_local_ray_listens_on_loopback_only_and_refuses_a_driver_without_its_token(tmp_path):
    # a trial of many short epochs: the sweep must still run when the intruder knocks (Ctrl-C ends it)
    run = Run(
        tmp_path,
        *["--space", "batch_grid", "--results-dir", str(tmp_path), "--name", "private", "--epochs", "100"],
        *["--set", "micro_batch_per_worker=[8]", "--set", "train_samples=64", "--repeats", "1", "--no-report"],
    )
    run.wait_for(r"epoch 1/100")  # the dashboard, its agents and the trial's workers are all up
    sockets = listening(set(run.started))
    assert any(name.startswith("gcs_server") for _, _, name in sockets), sockets
    # Ray's own: all on loopback. Torch's rendezvous store (a TCPStore in the group's rank 0, which
    # listens on every interface whatever its host) is the one socket beyond: docs/reliability.md, Security.
    exposed = [s for s in sockets if not is_loopback(s[0])]
    assert len(exposed) <= 1 and all(name.startswith("ray::RayTrainWorker") for _, _, name in exposed), sockets
    (gcs_port,) = {port for _, port, name in sockets if name.startswith("gcs_server")}

    # Ray resolves a loopback address to the machine's unless told it runs one node, as the sweep's Ray is
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH") and k != "RAY_ADDRESS"}
    env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    intruder = subprocess.run(
        [sys.executable, "-c", INTRUDER, f"127.0.0.1:{gcs_port}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.proc.poll() is None, "the sweep ended before the intruder was answered"
    assert intruder.returncode == 3 and "refused" in intruder.stdout, intruder.stdout + intruder.stderr[-3000:]
    assert "Authentication token is missing or incorrect" in intruder.stderr, intruder.stderr[-3000:]

    os.kill(run.proc.pid, signal.SIGINT)
    assert run.wait() == 130, run.output()
    assert run.left_running() == [], run.output()
