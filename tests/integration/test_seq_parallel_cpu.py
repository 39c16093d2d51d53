"""The ``seq_parallel`` space shrunk to CPU (#17): its ViT without a class token at 32 px, SP=2 on two ranks
against SP=1 on one rank at the same micro batch.

SP=2 on 2 ranks is one data-parallel rank whose two ranks split each image's 64 patch tokens: the same
samples, the same global batch and (trainers/model/sequence_parallel.py) the exact gradient, so the same steps as
SP=1 on one rank. SP=1 on 2 ranks would be data parallelism with twice the global batch: not comparable.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from raysweep.planning.space import load_space
from tests.integration.conftest import explain, run_cli, table

SHRUNK = {
    "model": "vit_micro_avg_patch4_32",  # 4 heads, 64 tokens: SP=2 divides both
    "image_size": 32,
    "train_samples": 64,
    "epochs": 1,
    "precision": "fp32",
}


def test_sp2_on_two_ranks_takes_the_steps_of_sp1_on_one(tmp_path: Path):
    bundled = load_space("seq_parallel")
    space = {
        "description": "seq_parallel shrunk: SP=2 on 2 ranks against SP=1 on 1 rank",
        "axes": [{"sequence_parallel": [1], "num_workers": [1]}, {"sequence_parallel": [2], "num_workers": [2]}],
        "fixed": bundled.fixed | SHRUNK,
    }
    path = tmp_path / "seq_parallel.yaml"
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    proc = run_cli(
        *("--space", str(path), "--results-dir", str(tmp_path), "--name", "sp"),
        *("--max-concurrent-trials", "1", "--no-report", "--no-dashboard"),
    )
    assert proc.returncode == 0, explain(proc)
    sweep = tmp_path / "sp"
    trials = sorted(table(sweep, "trials").to_pylist(), key=lambda r: r["sequence_parallel"])
    assert [(r["status"], r["sequence_parallel"], r["num_workers"]) for r in trials] == [
        ("completed", 1, 1),
        ("completed", 2, 2),
    ], explain(proc)
    sp1, sp2 = trials
    micro = bundled.fixed["micro_batch_per_worker"]
    for row in trials:  # micro x accumulation x data-parallel ranks (num_workers / SP), 1 here
        assert row["micro_batch_per_worker"] == micro and row["grad_accum_steps"] == 1
        assert row["global_batch"] == micro * row["grad_accum_steps"] * (row["num_workers"] // row["sequence_parallel"])
        assert row["optimizer_steps"] == SHRUNK["train_samples"] // row["global_batch"]
    ranks = [r for r in table(sweep, "ranks").to_pylist() if r["trial_id"] == sp2["trial_id"]]
    assert sorted(r["rank"] for r in ranks) == [0, 1] and all(r["peak_mem_gib"] > 0 for r in ranks)

    # Measured bit-identical over 8 steps; the tolerance allows for the pooled token sum, which SP adds up
    # in two halves and an all-reduce rather than in one pass.
    first = {e["trial_id"]: e["train_loss"] for e in table(sweep, "epochs").to_pylist() if e["epoch"] == 0}
    assert first[sp2["trial_id"]] == pytest.approx(first[sp1["trial_id"]], rel=1e-5), first
