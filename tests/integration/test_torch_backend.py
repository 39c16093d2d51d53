"""A Train run on ``TorchBackendConfig``: its ranks form a torch process group, its controller never imports torch."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.integration.conftest import REPO

# In a process of its own, as the CLI runs: this test process stays free of a Ray instance.
CHECK = """
import json, os, sys
import ray
from ray.train import RunConfig, ScalingConfig, UserCallback
from ray.train.torch import TorchTrainer
from raysweep.runtime.cluster import start_local
from raysweep.runtime.torch_backend import TorchBackendConfig

start_local(2, dashboard=False)
out = sys.argv[1]


class ControllerView(UserCallback):  # Ray Train runs a run's callbacks in its controller's process
    def after_report(self, run_context, metrics, checkpoint):
        with open(out, "w") as f:
            json.dump({"controller_has_torch": "torch" in sys.modules, "ranks": metrics}, f)


def per_rank(config):
    import torch
    import torch.distributed as dist

    total = torch.tensor([dist.get_rank() + 1.0])
    dist.all_reduce(total)
    ray.train.report(
        {"sum": total.item(), "world": dist.get_world_size(), "backend": dist.get_backend(),
         "rank_env": os.environ["RANK"], "rendezvous": bool(os.environ["MASTER_ADDR"])}
    )


TorchTrainer(
    per_rank,
    torch_config=TorchBackendConfig(backend="gloo", timeout_s=120),
    scaling_config=ScalingConfig(num_workers=2, resources_per_worker={"CPU": 1}),
    run_config=RunConfig(storage_path=os.path.dirname(out), callbacks=[ControllerView()]),
).fit()
ray.shutdown()
"""


def test_a_run_on_the_backend_sets_up_its_ranks_process_group_without_torch_in_its_controller(tmp_path):
    out = tmp_path / "seen.json"
    proc = subprocess.run(
        [sys.executable, "-c", CHECK, str(out)], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    seen = json.loads(out.read_text())
    assert seen["controller_has_torch"] is False
    assert seen["ranks"] == [
        {"sum": 3.0, "world": 2, "backend": "gloo", "rank_env": str(rank), "rendezvous": True} for rank in (0, 1)
    ]
