"""The sweep starts Ray Train's autoscaling coordinator early: it must be the very actor Train's runs then ask."""

from __future__ import annotations

import subprocess
import sys

from tests.integration.conftest import REPO

# In a process of its own, as the CLI runs: this test process stays free of a Ray instance.
CHECK = """
import ray
from ray.train.v2._internal.execution.scaling_policy.autoscaling_coordinator_client import (
    TrainAutoscalingCoordinatorClient,
)
from raysweep.runtime.train_run import start_train_coordinator

ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
started = start_train_coordinator()
asked = TrainAutoscalingCoordinatorClient("train-test")._autoscaling_coordinator
print("same actor" if asked._actor_id == started._actor_id else "another actor", ray.get(asked.__ray_ready__.remote()))
ray.shutdown()
"""


def test_a_train_run_finds_the_coordinator_the_sweep_started():
    proc = subprocess.run([sys.executable, "-c", CHECK], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip().splitlines()[-1] == "same actor True", proc.stdout
