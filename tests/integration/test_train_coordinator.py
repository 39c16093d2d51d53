"""The sweep starts Ray Train's autoscaling coordinator early: it must be the very actor Train's runs then ask."""

from __future__ import annotations

import ray
from ray.train.v2._internal.execution.scaling_policy.autoscaling_coordinator_client import (
    TrainAutoscalingCoordinatorClient,
)

from raysweep.train_run import start_train_coordinator


def test_a_train_run_finds_the_coordinator_the_sweep_started():
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        started = start_train_coordinator()
        asked = TrainAutoscalingCoordinatorClient("train-test")._autoscaling_coordinator
        assert asked._actor_id == started._actor_id
        assert ray.get(asked.__ray_ready__.remote())
    finally:
        ray.shutdown()
