"""The ``model_parallel`` space shrunk to CPU: its three splits of a global batch (data parallelism alone, tensor
parallelism, sequence parallelism) on two gloo ranks, against one rank training the whole batch.

At one global batch every split trains the same samples with (trainers/model/tensor_parallel.py,
trainers/model/sequence_parallel.py) the exact gradient, so each takes the steps of one rank alone: DP 2 each
rank half the batch, TP 2 each rank half of every block's heads and MLP columns, SP 2 half of every image's
tokens. The model is the CPU preset with 4 heads, width 96 and MLP 384 (TP 2 and SP 2 divide them all).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from raysweep.planning.space import load_space
from tests.integration.conftest import explain, run_cli, table

SHRUNK = {
    "model": "vit_micro_avg_patch4_32",
    "dataset": "digits",  # a fixed split: the DP ranks' shards of a step are the one rank's batch
    "in_chans": 3,
    "image_size": 32,
    "train_samples": 64,  # 8 steps of the bundled global batch of 8
    "epochs": 1,
    "precision": "fp32",
}


def test_dp_tp_and_sp_on_two_ranks_take_the_steps_of_one_rank(tmp_path: Path):
    bundled = load_space("model_parallel")
    fixed = {k: v for k, v in bundled.fixed.items() if k != "num_workers"} | SHRUNK
    space = {
        "description": "model_parallel shrunk: DP 2, TP 2 and SP 2 on 2 ranks against 1 rank",
        "axes": [
            {"num_workers": [1], "engine": ["ddp"]},
            {"num_workers": [2], "engine": ["ddp"]},
            {"num_workers": [2], "tensor_parallel": [2], "engine": ["ddp"]},
            {"num_workers": [2], "sequence_parallel": [2], "engine": ["ddp"]},
        ],
        "fixed": fixed,
    }
    path = tmp_path / "model_parallel.yaml"
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    proc = run_cli(
        *("--space", str(path), "--results-dir", str(tmp_path), "--name", "mp"),
        *("--max-concurrent-trials", "1", "--no-report", "--no-dashboard"),
    )
    assert proc.returncode == 0, explain(proc)
    sweep = tmp_path / "mp"
    trials = table(sweep, "trials").to_pylist()
    split = {(r["num_workers"], r["tensor_parallel"], r["sequence_parallel"]): r for r in trials}
    assert sorted(split) == [(1, 1, 1), (2, 1, 1), (2, 1, 2), (2, 2, 1)], explain(proc)
    assert all(r["status"] == "completed" for r in trials), explain(proc)
    for row in trials:  # the bundled global batch, whatever the split: micro batch x data-parallel ranks
        dp = row["num_workers"] // (row["tensor_parallel"] * row["sequence_parallel"])
        assert row["global_batch"] == bundled.fixed["global_batch"] == row["micro_batch_per_worker"] * dp
        assert row["optimizer_steps"] == SHRUNK["train_samples"] // row["global_batch"]
    tp_ranks = [r for r in table(sweep, "ranks").to_pylist() if r["trial_id"] == split[(2, 2, 1)]["trial_id"]]
    assert sorted(r["rank"] for r in tp_ranks) == [0, 1] and all(r["peak_mem_gib"] > 0 for r in tp_ranks)

    # TP 2 and SP 2 keep one data-parallel replica: measured bit-identical to one rank over 8 steps (the tolerance
    # allows for TP's row-parallel all-reduce and SP's pooled token sum, which add up in another order). DP 2 sums
    # two half-batch gradients where one rank sums the batch in one backward: a last-bit difference in the
    # gradient that 8 AdamW steps (each normalising by the gradient's size) carry to the loss (measured 2.7e-5).
    one_rank = split[(1, 1, 1)]["final_loss"]
    for key, rel in (((2, 2, 1), 1e-6), ((2, 1, 2), 1e-6), ((2, 1, 1), 1e-4)):
        assert split[key]["final_loss"] == pytest.approx(one_rank, rel=rel), (key, split[key]["final_loss"], one_rank)
