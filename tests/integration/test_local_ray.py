"""A local Ray starts only the processes a sweep uses: no idle workers that no sweep process could take."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.integration.conftest import REPO

# In a process of its own, as the CLI runs: this test process stays free of a Ray instance.
CHECK = """
import psutil, ray
from raysweep.runtime.cluster import start_local

start_local(2, dashboard=False)

@ray.remote(num_cpus=0)
class Probe:
    def ready(self):
        return True

ray.get(Probe.remote().ready.remote())  # Ray has started the workers it starts for a driver by now
commands = [p.cmdline() for p in psutil.Process().children(recursive=True)]
# an idle worker, or one still starting (its command line not yet renamed); the raylet's names the script too
others = [
    c for c in commands
    if c[0].startswith("ray::IDLE") or ("default_worker.py" in " ".join(c) and not c[0].endswith("raylet"))
]
print(len(others))
ray.shutdown()
"""


def test_a_local_ray_starts_no_idle_worker_processes():
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_prestart_worker_first_driver")}
    proc = subprocess.run([sys.executable, "-c", CHECK], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip().splitlines()[-1] == "0", proc.stdout


ADDRESS_CHECK = """
import os, socket, ray
from raysweep.runtime.cluster import shutdown, start_local

start_local(2, dashboard=False)

@ray.remote(num_cpus=0)
def cluster_found():
    from ray._private.services import canonicalize_bootstrap_address_or_die
    from ray.dashboard.utils import get_address_for_submission_client

    # where Ray's State API (Ray Train's PlacementGroupCleaner asks it) looks for "the" cluster from a worker,
    # and the server it then asks: this Ray has no dashboard, so none that answers (never the default port's)
    api = get_address_for_submission_client(None)
    host, port = api.removeprefix("http://").rsplit(":", 1)
    with socket.socket() as s:
        answers = s.connect_ex((host, int(port))) == 0
    return os.environ.get("RAY_ADDRESS"), canonicalize_bootstrap_address_or_die(None), api, answers

own = ray.get_runtime_context().gcs_address
env_address, found, api, answers = ray.get(cluster_found.remote())
print(env_address == found == own, api != "http://127.0.0.1:8265" and not answers)
print("RAY_ADDRESS" in os.environ, "RAY_GCS_SERVER_PORT" in os.environ)  # the driver's own environment
shutdown()
"""


def test_every_process_of_a_local_ray_is_told_its_own_cluster_and_the_driver_is_not():
    """With another Ray on the machine (a second sweep, a ``ray start`` cluster), a worker that looks for "the"
    cluster must find its own, and the State API of a Ray without dashboard must not reach another's dashboard."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_GCS_SERVER_PORT")}
    proc = subprocess.run(
        [sys.executable, "-c", ADDRESS_CHECK], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip().splitlines()[-2:] == ["True True", "False False"], proc.stdout
