"""End to end on CPU: real Ray Tune, Ray Train, DeepSpeed over gloo and timm ViTs; Parquet tables read back."""

from __future__ import annotations

import math

from raysweep.core.schema import TRIALS
from tests.integration.conftest import explain, run_cli, table

# Columns a completed trial must fill (the probe is 0, not null, for one worker). CPUs have no known
# peak FLOP/s (so no mfu) and no energy counter; skipped_files counts only with skip_bad_files.
NULLABLE = ("error", "peak_flops", "mfu", "joules_per_sample", "skipped_files")
REQUIRED = [c for c in TRIALS.names if c not in NULLABLE]


# One rank has no collectives, so no profiled window (trainers/epoch_plan.py): no comm figures.
COMM_PROFILE = ("comm_kernel_ms", "comm_overlap")


def assert_filled(row: dict) -> None:
    required = REQUIRED if row["num_workers"] > 1 else [c for c in REQUIRED if c not in COMM_PROFILE]
    empty = [c for c in required if row[c] is None or (isinstance(row[c], float) and math.isnan(row[c]))]
    assert not empty, f"trial {row['trial_id']} left columns empty: {empty}"


def test_two_worker_deepspeed_trial_fills_every_table(two_rank_sweep):
    """2 DeepSpeed ranks over gloo: every trials column, one epochs row per epoch, one ranks row per rank. The
    micro batch 16 trial of the session's 2-rank sweep (conftest.two_rank_sweep: 2 epochs of 512 samples)."""
    sweep, terminal, _ = two_rank_sweep
    trials = table(sweep, "trials").to_pylist()
    assert sorted(r["micro_batch_per_worker"] for r in trials) == [16, 32], "\n".join(terminal[-60:])
    (row,) = [r for r in trials if r["micro_batch_per_worker"] == 16]
    assert row["status"] == "completed", row["error"]
    assert_filled(row)
    assert row["num_workers"] == 2 and row["global_batch"] == 32 and row["samples_per_epoch"] == 512
    assert row["optimizer_steps"] == 32
    assert len(row["device_names"]) == 2 and row["num_nodes"] == 1
    assert row["allreduce_probe_ms"] > 0
    # 2 warm-up steps after the start, and the profiled window (3 steps) after the timed ones of the last epoch
    assert row["timed_steps"] == 32 - 2 - 3 and row["timed_samples"] == 27 * 32
    assert row["comm_kernel_ms"] > 0 and 0 <= row["comm_overlap"] <= 1
    assert row["throughput"] == row["timed_samples"] / row["timed_s"]
    assert row["flops_per_sample"] > 0 and row["mfu"] is None
    assert 0 <= row["val_accuracy"] <= 1 and row["throughput"] > 0
    assert row["throughput_per_worker"] * 2 == row["throughput"]
    assert row["step_time_p95_ms"] >= row["step_time_ms"] * 0.5
    assert row["setup_s"] > 0 and row["trial_wall_s"] > row["train_time_s"]

    epochs = sorted(
        (e for e in table(sweep, "epochs").to_pylist() if e["trial_id"] == row["trial_id"]), key=lambda e: e["epoch"]
    )
    assert [e["epoch"] for e in epochs] == [0, 1]
    assert all(e["val_accuracy"] is not None and e["throughput"] > 0 for e in epochs)
    assert epochs[1]["elapsed_s"] > epochs[0]["elapsed_s"]
    assert epochs[1]["train_elapsed_s"] == epochs[0]["epoch_time_s"] + epochs[1]["epoch_time_s"]

    ranks = [r for r in table(sweep, "ranks").to_pylist() if r["trial_id"] == row["trial_id"]]
    assert sorted(r["rank"] for r in ranks) == [0, 1]
    assert all(r["step_time_ms"] > 0 for r in ranks)
    # no slow ranks and no measure_wait: no pre-sync barrier, so neither its wait nor the busy time
    assert all(r["wait_ms"] is None and r["busy_ms"] is None and r["slowdown_achieved"] == 1.0 for r in ranks)


def test_embedded_default_runs_batch_grid_to_completion(tmp_path):
    """The README's run command: 5 trials of the CPU default 3 times, all completed, every column filled, a report.
    Two epochs of 512 samples a trial instead of the default's five of the whole split: what is pinned (the grid,
    its repeats, every column, the report) is the same, and the trials' own cost is most of the test's."""
    proc = run_cli(
        *("--space", "batch_grid", "--epochs", "2", "--set", "train_samples=512"),
        *("--results-dir", str(tmp_path), "--name", "default"),
        timeout=900,
    )
    assert proc.returncode == 0, explain(proc)
    trials = table(tmp_path / "default", "trials").to_pylist()
    assert sorted((r["repeat"], r["micro_batch_per_worker"]) for r in trials) == [
        (k, b) for k in range(3) for b in (16, 32, 64, 128, 256)
    ]
    for row in trials:
        assert row["status"] == "completed", row["error"]
        assert_filled(row)
        assert row["model"] == "vit_micro_patch4_32" and row["dataset"] == "digits" and row["precision"] == "fp32"
    assert "report: " in proc.stdout and (tmp_path / "default" / "report" / "report.md").is_file()
    assert "5 trials in" in proc.stdout
