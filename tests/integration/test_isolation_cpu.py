"""Trials of one sweep are isolated (#13): one sweep of four 1-worker trials, one at a time, in this order:

0. micro batch 256, seed 0: a big activation footprint;
1. micro batch 16, seed 0, made to fail in its second epoch (``inject_fault``), after reporting its first;
2. micro batch 16, seed 0: the same trial without the fault;
3. micro batch 16, seed 1.

By default trials of one shape share a worker group's processes (``raysweep.runtime.worker_groups``): trials 0
and 1 run in one, the failure ends it, trials 2 and 3 run in the next.  On CPU ``peak_mem_gib`` is the
process's ``VmHWM``, reset between trials: trial 1 reports less than trial 0 only if the reset works.
With ``--no-shared-workers`` every trial has processes of its own.

A second sweep runs DeepSpeed ZeRO 0, 1, 3 and 0 again in one shared group: no trial's engine outlives it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.integration.conftest import explain, on_shared, run_cli, table
from tests.integration.test_sweep_cpu import assert_filled

FAULT_STEP = 6  # the 3rd optimizer step of epoch 1 (4 steps an epoch): epoch 0 is reported first

SPACE = {
    "description": "isolation: a big trial, a failing one, then the same small trial at two seeds",
    "axes": [
        {"micro_batch_per_worker": [256], "train_samples": [256], "epochs": [1]},  # one step: the footprint
        {"inject_fault": [f"raise@0:{FAULT_STEP}"]},
        {"seed": [0, 1]},
    ],
    "fixed": {
        "model": "vit_micro_patch4_32",
        "image_size": 32,
        "dataset": "digits",  # a validation split: val_accuracy is a figure too
        "micro_batch_per_worker": 16,
        "train_samples": 64,
        "epochs": 2,
        "warmup_steps": 1,
        "checkpoint_every": 0,
        "precision": "fp32",
        "num_workers": 1,
    },
}


@pytest.mark.parametrize("shared", [True, False], ids=["shared-workers", "a-run-per-trial"])
def test_trials_of_one_sweep_share_no_memory_seed_or_failure(tmp_path: Path, shared: bool, shared_ray: str):
    space = tmp_path / "isolation.yaml"
    space.write_text(yaml.safe_dump(SPACE, sort_keys=False))
    proc = run_cli(
        *("--space", str(space), "--results-dir", str(tmp_path), "--name", "iso"),
        *on_shared(shared_ray),
        "--no-report",
        "--no-dashboard",
        *([] if shared else ["--no-shared-workers"]),
    )
    assert proc.returncode == 1, explain(proc)  # the sweep ran to its end; not every trial completed
    sweep = tmp_path / "iso"
    trials = sorted(table(sweep, "trials").to_pylist(), key=lambda r: r["started_at"])
    order = [(r["micro_batch_per_worker"], r["inject_fault"], r["seed"]) for r in trials]
    assert order == [(256, "", 0), (16, f"raise@0:{FAULT_STEP}", 0), (16, "", 0), (16, "", 1)], explain(proc)
    big, faulty, same, other = trials

    # (c) the failed row says so and why; the completed one after it has every figure and no error
    assert faulty["status"] == "failed" and f"injected fault at step {FAULT_STEP}" in faulty["error"], faulty
    for row in (big, same, other):
        assert row["status"] == "completed" and row["error"] is None, row
    for row in (same, other):
        assert_filled(row)
    assert same["optimizer_steps"] == 2 * 64 // 16

    # the processes each trial ran in: shared until a failure ends the group, or a run per trial
    groups = [row["worker_group"] for row in trials]
    if shared:
        assert groups[0] == groups[1] != groups[2] == groups[3], groups
    else:
        assert len(set(groups)) == 4 and all(g.endswith(row["trial_id"]) for g, row in zip(groups, trials)), groups

    # (a) every later trial's peak is below the big one's, in both tables
    ranks = {r["trial_id"]: r for r in table(sweep, "ranks").to_pylist()}
    for row in (faulty, same, other):
        assert row["peak_mem_gib"] < big["peak_mem_gib"], (row["trial_id"], row["peak_mem_gib"], big["peak_mem_gib"])
        assert ranks[row["trial_id"]]["peak_mem_gib"] < ranks[big["trial_id"]]["peak_mem_gib"]

    # (b) the seed reaches weights and data: seed 0 reproduces bit for bit (one fp32 rank), seed 1 differs
    first = {e["trial_id"]: e["train_loss"] for e in table(sweep, "epochs").to_pylist() if e["epoch"] == 0}
    assert first[faulty["trial_id"]] == first[same["trial_id"]], first
    assert first[other["trial_id"]] != first[same["trial_id"]], first


# ZeRO 1 and 3 between two ZeRO-0 trials of one group: a model big enough (22M parameters) that an engine
# left alive (its model, gradients and AdamW state, hundreds of MiB) shows in the next trial's peak. One ZeRO-1
# and one ZeRO-3 trial before the second ZeRO-0 one: either engine left alive is over the test's margin alone.
ZERO_SPACE = {
    "description": "isolation: ZeRO-0, 1 and 3 one after another in one shared worker group, then ZeRO-0 again",
    # two grids of one run (not repeats, whose rounds run in a random order): ZeRO 0, 1, 3, then 0
    "axes": [{"zero_stage": [0, 1, 3], "seed": [0]}, {"zero_stage": [0], "seed": [1]}],
    "fixed": {
        "model": "vit_small_patch16_224",
        "image_size": 32,
        "dataset": "synthetic",
        "micro_batch_per_worker": 16,
        "train_samples": 32,  # two steps: the optimizer state exists after the first
        "epochs": 1,
        "checkpoint_every": 0,
        "precision": "fp32",
        "num_workers": 1,
    },
}


def test_a_zero_trial_leaves_no_memory_to_the_later_trials_of_its_worker_group(tmp_path: Path, shared_ray: str):
    """A DeepSpeed ZeRO 1-3 trial's engine stayed alive in its worker after it ended (hooks on the gradient
    accumulators, reachable from the autograd graph only), so the group's later trials started from its
    memory. On CPU ``peak_mem_gib`` is the process's ``VmHWM`` reset to what it holds at a trial's start:
    the group's second ZeRO-0 trial, after a ZeRO-1 and a ZeRO-3 trial, peaks where its first did."""
    space = tmp_path / "zero.yaml"
    space.write_text(yaml.safe_dump(ZERO_SPACE, sort_keys=False))
    proc = run_cli(
        *("--space", str(space), "--results-dir", str(tmp_path), "--name", "zero"),
        *on_shared(shared_ray),
        "--no-report",
        "--no-dashboard",
    )
    assert proc.returncode == 0, explain(proc)
    trials = sorted(table(tmp_path / "zero", "trials").to_pylist(), key=lambda r: r["started_at"])
    assert [r["zero_stage"] for r in trials] == [0, 1, 3, 0], explain(proc)
    assert len({r["worker_group"] for r in trials}) == 1, [r["worker_group"] for r in trials]
    first, last = trials[0], trials[3]
    # an engine left alive holds more than 0.3 GiB here; the first trial's peak is about 1.4 GiB
    assert last["peak_mem_gib"] < first["peak_mem_gib"] + 0.1, [(r["zero_stage"], r["peak_mem_gib"]) for r in trials]
