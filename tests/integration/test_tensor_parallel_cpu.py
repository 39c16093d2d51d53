"""The ``model_parallel``, ``seq_parallel`` and ``scientific`` spaces shrunk to CPU, in one sweep (one driver, one
Ray, one trial at a time; each space's trials keep its own fixed values as axis values).

``model_parallel``: its three splits of a global batch (data parallelism alone, tensor parallelism, sequence
parallelism) on two gloo ranks under DDP, against one rank training the whole batch. At one global batch every
split trains the same samples with (trainers/model/tensor_parallel.py, trainers/model/sequence_parallel.py) the
exact gradient, so each takes the steps of one rank alone: DP 2 each rank half the batch, TP 2 each rank half of
every block's heads and MLP columns, SP 2 half of every image's tokens. The model is the CPU preset with 4 heads,
width 96 and MLP 384 (TP 2 and SP 2 divide them all).

``seq_parallel`` (#17): its ViT without a class token at 32 px under DeepSpeed, SP=2 on two ranks against SP=1 on
one rank at the same micro batch. SP=2 on 2 ranks is one data-parallel rank whose two ranks split each image's 64
patch tokens: the same samples, the same global batch and the exact gradient, so the same steps as SP=1 on one
rank. SP=1 on 2 ranks would be data parallelism with twice the global batch: not comparable.

``scientific``: a class-token ViT (3 heads, 65 tokens) trained from a folder of 8-channel uint16 arrays of mixed
sizes, SP 2 with every block checkpointed on two ranks against SP 1 on one. SP 2 on 2 ranks is one data-parallel
rank: the same samples and crops as SP 1 on one rank, and the exact gradient although 65 tokens need padding and 3
heads split 2 and 1; checkpointing changes no value. So the first epoch's loss is SP 1's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from raysweep.planning.space import load_space
from tests.image_folders import make_array_folder
from tests.integration.conftest import explain, on_shared, run_cli, table

MP_SHRUNK = {
    "model": "vit_micro_avg_patch4_32",
    "dataset": "digits",  # a fixed split: the DP ranks' shards of a step are the one rank's batch
    "in_chans": 3,
    "image_size": 32,
    "train_samples": 64,  # 8 steps of the bundled global batch of 8
    "epochs": 1,
    "precision": "fp32",
}
SP_SHRUNK = {
    "model": "vit_micro_avg_patch4_32",  # 4 heads, 64 tokens: SP=2 divides both
    "image_size": 32,
    "train_samples": 64,
    "epochs": 1,
    "precision": "fp32",
}
SCI_SHRUNK = {
    "model": "vit_micro_patch4_32",  # class token, pooled by it; 3 heads; 32 px / 4 = 64 patches + 1
    "image_size": 32,
    "train_samples": 16,
    "micro_batch_per_worker": 4,
    "global_batch": 4,  # one data-parallel rank either way (the model_parallel trials fix 8)
    "precision": "fp32",
    "dataset": "arrays",
}
MP = load_space("model_parallel")
SP = load_space("seq_parallel")
SCI = load_space("scientific")


def axis(values: dict, **point) -> dict:
    """One trial of another space beside the model_parallel ones: its values, each a one-value list."""
    return {k: [v] for k, v in (values | point).items()}


def sp_axis(sequence_parallel: int, num_workers: int) -> dict:
    """The seq_parallel space's shrunk trial (no checkpointing, which the model_parallel trials turn on)."""
    values = SP.fixed | SP_SHRUNK | {"activation_checkpointing": 0, "in_chans": 3}
    return axis(values, sequence_parallel=sequence_parallel, num_workers=num_workers)


@pytest.fixture(scope="module")
def arrays(tmp_path_factory) -> Path:
    return make_array_folder(tmp_path_factory.mktemp("arrays") / "arrays", channels=8, dtype="uint16")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, arrays: Path, shared_ray: str) -> Path:
    """The four model_parallel splits, the two seq_parallel and the two scientific trials: one CLI sweep."""
    tmp_path = tmp_path_factory.mktemp("parallel")
    sci = SCI.fixed | SCI_SHRUNK | {"data_dir": str(arrays)}
    fixed = {k: v for k, v in MP.fixed.items() if k != "num_workers"} | MP_SHRUNK
    space = {
        "description": "model_parallel shrunk: DP 2, TP 2 and SP 2 on 2 ranks against 1 rank; seq_parallel shrunk",
        # the 1-rank trials first, then the 2-rank ones: trials run in this order, so each worker count's
        # group of processes starts once
        "axes": [
            {"num_workers": [1], "engine": ["ddp"]},
            sp_axis(1, 1),
            axis(sci, sequence_parallel=1, num_workers=1, activation_checkpointing=0),
            {"num_workers": [2], "engine": ["ddp"]},
            {"num_workers": [2], "tensor_parallel": [2], "engine": ["ddp"]},
            {"num_workers": [2], "sequence_parallel": [2], "engine": ["ddp"]},
            sp_axis(2, 2),
            axis(sci, sequence_parallel=2, num_workers=2, activation_checkpointing=1),
        ],
        "fixed": fixed,
    }
    path = tmp_path / "parallel.yaml"
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    proc = run_cli(
        *("--space", str(path), "--results-dir", str(tmp_path), "--name", "mp"),
        *on_shared(shared_ray),
        "--no-report",
        "--no-dashboard",
    )
    assert proc.returncode == 0, explain(proc)
    trials = table(tmp_path / "mp", "trials").to_pylist()
    assert len(trials) == 8 and all(r["status"] == "completed" for r in trials), explain(proc)
    return tmp_path / "mp"


def test_dp_tp_and_sp_on_two_ranks_take_the_steps_of_one_rank(sweep: Path):
    trials = [r for r in table(sweep, "trials").to_pylist() if r["engine"] == "ddp"]  # the model_parallel ones
    split = {(r["num_workers"], r["tensor_parallel"], r["sequence_parallel"]): r for r in trials}
    assert sorted(split) == [(1, 1, 1), (2, 1, 1), (2, 1, 2), (2, 2, 1)]
    for row in trials:  # the bundled global batch, whatever the split: micro batch x data-parallel ranks
        dp = row["num_workers"] // (row["tensor_parallel"] * row["sequence_parallel"])
        assert row["global_batch"] == MP.fixed["global_batch"] == row["micro_batch_per_worker"] * dp
        assert row["optimizer_steps"] == MP_SHRUNK["train_samples"] // row["global_batch"]
        assert row["activation_checkpointing"] == 1 and row["dataset"] == "digits"
    tp_ranks = [r for r in table(sweep, "ranks").to_pylist() if r["trial_id"] == split[(2, 2, 1)]["trial_id"]]
    assert sorted(r["rank"] for r in tp_ranks) == [0, 1] and all(r["peak_mem_gib"] > 0 for r in tp_ranks)

    # TP 2 and SP 2 keep one data-parallel replica: measured bit-identical to one rank over 8 steps (the tolerance
    # allows for TP's row-parallel all-reduce and SP's pooled token sum, which add up in another order). DP 2 sums
    # two half-batch gradients where one rank sums the batch in one backward: a last-bit difference in the
    # gradient that 8 AdamW steps (each normalising by the gradient's size) carry to the loss (measured 2.7e-5).
    one_rank = split[(1, 1, 1)]["final_loss"]
    for key, rel in (((2, 2, 1), 1e-6), ((2, 1, 2), 1e-6), ((2, 1, 1), 1e-4)):
        assert split[key]["final_loss"] == pytest.approx(one_rank, rel=rel), (key, split[key]["final_loss"], one_rank)


def test_sp2_on_two_ranks_takes_the_steps_of_sp1_on_one(sweep: Path):
    trials = sorted(
        (r for r in table(sweep, "trials").to_pylist() if r["dataset"] == "synthetic"),  # the seq_parallel ones
        key=lambda r: r["sequence_parallel"],
    )
    assert [(r["sequence_parallel"], r["num_workers"], r["zero_stage"], r["dataset"]) for r in trials] == [
        (1, 1, SP.fixed["zero_stage"], "synthetic"),
        (2, 2, SP.fixed["zero_stage"], "synthetic"),
    ]
    sp1, sp2 = trials
    micro = SP.fixed["micro_batch_per_worker"]
    for row in trials:  # micro x accumulation x data-parallel ranks (num_workers / SP), 1 here
        assert row["micro_batch_per_worker"] == micro and row["grad_accum_steps"] == 1
        assert row["global_batch"] == micro * row["grad_accum_steps"] * (row["num_workers"] // row["sequence_parallel"])
        assert row["optimizer_steps"] == SP_SHRUNK["train_samples"] // row["global_batch"]
        assert row["activation_checkpointing"] == 0
    ranks = [r for r in table(sweep, "ranks").to_pylist() if r["trial_id"] == sp2["trial_id"]]
    assert sorted(r["rank"] for r in ranks) == [0, 1] and all(r["peak_mem_gib"] > 0 for r in ranks)

    # Measured bit-identical over 8 steps; the tolerance allows for the pooled token sum, which SP adds up
    # in two halves and an all-reduce rather than in one pass.
    first = {e["trial_id"]: e["train_loss"] for e in table(sweep, "epochs").to_pylist() if e["epoch"] == 0}
    assert first[sp2["trial_id"]] == pytest.approx(first[sp1["trial_id"]], rel=1e-5), first


def test_sp2_with_checkpointing_trains_8_channel_uint16_arrays_as_sp1_does(sweep: Path, arrays: Path):
    trials = sorted(
        (r for r in table(sweep, "trials").to_pylist() if r["dataset"] == "arrays"),
        key=lambda r: r["sequence_parallel"],
    )
    assert [(r["sequence_parallel"], r["in_chans"], r["activation_checkpointing"]) for r in trials] == [
        (1, 8, 0),
        (2, 8, 1),
    ]
    sp1, sp2 = trials
    epochs = {e["trial_id"]: e for e in table(sweep, "epochs").to_pylist() if e["epoch"] == 0}
    assert epochs[sp2["trial_id"]]["train_loss"] == pytest.approx(epochs[sp1["trial_id"]]["train_loss"], rel=1e-4)
    assert epochs[sp1["trial_id"]]["val_accuracy"] is not None

    # the statistics were measured once, beside the folder, and both trials read them
    assert len(list((arrays / ".raysweep-prepared").glob("*-arrays-stats/channel_stats.json"))) == 1
