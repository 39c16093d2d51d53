"""``--find-max-batch`` end to end on CPU workers: a memory budget stands in for device memory.

Measured on the 2-core CI machine (vit_micro_patch4_32, 32 px, DDP, one rank): the rank's resident
peak is 1.14 GiB at micro batch 128 and 1.39 GiB at 256, so a budget of 1.27 GiB lets 128 fit and
stops 256 with 125 MiB to spare either side. Two probes (128 fits, 256 runs out of memory) find the
edge; the sweep's grid [128, 512] is clipped to it.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from raysweep.core.store import read_table
from tests.integration.conftest import explain, on_shared, run_cli

BUDGET_GIB = 1.27


def test_the_edge_is_found_under_a_memory_budget_and_the_sweep_runs_clipped_to_it(tmp_path, shared_ray):
    proc = run_cli(
        "--space", "batch_grid", "--repeats", "1", "--find-max-batch", "--max-batch-probes", "2",
        "--results-dir", str(tmp_path), "--name", "fmb", "--no-dashboard", *on_shared(shared_ray),
        "--set", "engine=ddp", "--set", "dataset=synthetic", "--set", "image_size=32",
        "--set", "train_samples=640", "--set", "epochs=1", "--set", "micro_batch_per_worker=[128,512]",
        "--set", "max_steps_per_epoch=2", "--set", "warmup_steps=1", "--set", "checkpoint_every=0",
        "--set", f"memory_budget_gib={BUDGET_GIB}",
        timeout=400,
    )  # fmt: skip
    assert proc.returncode == 0, explain(proc)
    sweep = tmp_path / "fmb"

    (row,) = read_table(sweep / "max_batch", "max_batch").to_pylist()  # one configuration
    assert row["sweep"] == "fmb" and json.loads(row["configuration"])["memory_budget_gib"] == BUDGET_GIB
    probed = dict(zip(row["probed_micro_batches"], row["probe_statuses"]))
    assert probed == {128: "completed", 256: "oom"}, row
    edge = row["max_micro_batch"]
    assert edge == 128 and row["first_oom_micro_batch"] == 256
    assert 0 < row["peak_mem_gib"] <= BUDGET_GIB and row["throughput"] > 0

    # The probes were real trials, recorded by the CLI's recorder; the out-of-memory one once, as oom.
    probe_rows = [r for path in sorted((sweep / "max_batch").glob("probes-*/trials/*.parquet"))
                  for r in pq.read_table(path).to_pylist()]  # fmt: skip
    assert sorted((r["micro_batch_per_worker"], r["status"]) for r in probe_rows) == [(128, "completed"), (256, "oom")]
    assert "find-max-batch round 1: 1 configuration at micro batch 128: 1 completed" in proc.stdout
    assert "find-max-batch round 2: 1 configuration at micro batch 256: 1 oom" in proc.stdout

    trials = read_table(sweep / "trials", "trials").to_pylist()
    assert [(t["micro_batch_per_worker"], t["status"]) for t in trials] == [(edge, "completed")]  # 512 became 128

    report = (sweep / "report" / "report.md").read_text()
    assert "Largest micro batch that fits" in report and "max_micro_batch" in report
