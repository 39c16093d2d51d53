"""A rank's process starts importing the trials' code as it starts; the sweep's other processes do not."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.integration.conftest import REPO

# In a process of its own, as the CLI runs: this test process stays free of a Ray instance.
CHECK = """
import json, os, sys
import ray
from raysweep.cluster import start_local
from raysweep.params import TrialParams
from raysweep.train_run import torch_trainer

start_local(3, dashboard=False)
out = sys.argv[1]


def seen_here():
    import trainers.trial_code
    # the hook's future, before anything in this process asked for the trials' code
    return {"started_at_process_start": trainers.trial_code._started is not None, "pid": os.getpid()}


def per_rank(config):
    rank = ray.train.get_context().get_world_rank()
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(seen_here(), f)


@ray.remote(num_cpus=0)
class Other:
    def seen(self):
        return seen_here()


params = TrialParams(model="vit_tiny_patch16_224", dataset="synthetic", device="cpu", num_workers=2)
torch_trainer(params, per_rank, {}, "preload", out, 120, callbacks=[]).fit()
with open(os.path.join(out, "other.json"), "w") as f:
    json.dump(ray.get(Other.remote().seen.remote()), f)
ray.shutdown()
"""


def test_a_ranks_process_starts_the_imports_with_the_process_and_another_actors_does_not(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", CHECK, str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["started_at_process_start"] for r in ranks] == [True, True]
    assert json.loads((tmp_path / "other.json").read_text())["started_at_process_start"] is False
