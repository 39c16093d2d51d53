"""Every bundled space, run by the real CLI on CPU workers over gloo, shrunk with ``--set``; tables read back.

Each run is at most 4 trials of at most 2 workers on ``train_samples`` of a few hundred, so it takes about
a minute on 2 cores.  ``placement`` needs several nodes: its dry run is in tests/test_spaces_dry_run.py and
its cluster run in test_cluster_fit.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from raysweep.core.params import LR_RULES
from tests.integration.conftest import explain, on_shared, run_cli, table

SHRINK = ("--epochs", "1", "--repeats", "1", "--no-report", "--no-dashboard")


def run_space(tmp_path: Path, name: str, *sets: str, address: str) -> tuple[Path, list[dict]]:
    """Run a bundled space with ``--set KEY=VALUE`` items on the shared cluster at ``address``; every trial must
    complete."""
    args = [a for item in sets for a in ("--set", item)] + on_shared(address)
    proc = run_cli("--space", name, "--results-dir", str(tmp_path), "--name", name, *SHRINK, *args)
    assert proc.returncode == 0, explain(proc)
    sweep = tmp_path / name
    trials = table(sweep, "trials").to_pylist()
    assert trials, explain(proc)
    for row in trials:
        assert row["status"] == "completed", f"{row['trial_id']}: {row['error']}\n{explain(proc)}"
        assert row["throughput"] > 0 and row["peak_mem_gib"] > 0
    return sweep, trials


def params_of(row: dict) -> dict:
    return json.loads(row["params_json"])


def test_accum_grid_fixed_global_batch_and_fixed_micro_batch(tmp_path, shared_ray):
    _, trials = run_space(tmp_path, "accum_grid", "grad_accum_steps=[1,4]", "train_samples=512", address=shared_ray)
    points = sorted(
        (params_of(r)["global_batch"] > 0, r["grad_accum_steps"], r["micro_batch_per_worker"], r["global_batch"])
        for r in trials
    )
    # (global batch fixed?, accumulation, micro batch, global batch) on 2 workers
    assert points == [(False, 1, 32, 64), (False, 4, 32, 256), (True, 1, 128, 256), (True, 4, 32, 256)]
    for r in trials:
        assert r["num_workers"] == 2 and r["samples_per_epoch"] == 512
        assert r["optimizer_steps"] == 512 // r["global_batch"]


def test_strong_scaling_splits_a_fixed_job_over_the_workers(tmp_path, shared_ray):
    _, trials = run_space(
        tmp_path, "strong_scaling", "num_workers=[1,2]", "train_samples=128", "global_batch=32", address=shared_ray
    )
    trials.sort(key=lambda r: r["num_workers"])
    assert [r["num_workers"] for r in trials] == [1, 2]
    assert [r["micro_batch_per_worker"] for r in trials] == [32, 16]
    assert {(r["global_batch"], r["samples_per_epoch"], r["optimizer_steps"]) for r in trials} == {(32, 128, 4)}
    assert {r["data_scaling"] for r in trials} == {"fixed"}


def test_weak_scaling_grows_the_job_with_the_workers(tmp_path, shared_ray):
    sets = ("num_workers=[1,2]", "train_samples=64", "micro_batch_per_worker=16")
    _, trials = run_space(tmp_path, "weak_scaling", *sets, address=shared_ray)
    trials.sort(key=lambda r: r["num_workers"])
    points = [(r["num_workers"], r["global_batch"], r["samples_per_epoch"]) for r in trials]
    assert points == [(1, 16, 64), (2, 32, 128)]
    assert {r["micro_batch_per_worker"] for r in trials} == {16}
    assert {r["optimizer_steps"] for r in trials} == {4}  # the same steps, each twice the work
    assert {r["data_scaling"] for r in trials} == {"per_worker"}


def test_heterogeneity_slow_rank_computes_longer_and_waits_less(tmp_path, shared_ray):
    sweep, trials = run_space(
        tmp_path, "heterogeneity", "train_samples=256", "micro_batch_per_worker=16", address=shared_ray
    )
    assert sorted((r["slow_ranks"], r["slow_factor"]) for r in trials if r["slow_ranks"]) == [("0", 0.3), ("0", 0.6)]
    assert len(trials) == 3 and {r["num_workers"] for r in trials} == {2}
    ranks: dict[str, dict[int, dict]] = {}
    for row in table(sweep, "ranks").to_pylist():
        ranks.setdefault(row["trial_id"], {})[row["rank"]] = row
    for trial in trials:
        slow, fast = ranks[trial["trial_id"]][0], ranks[trial["trial_id"]][1]
        if trial["slow_ranks"]:
            # The slow rank arrives last at the sync, so it waits least; the fast one idles for it.
            assert slow["busy_ms"] > fast["busy_ms"], (trial["slow_factor"], slow, fast)
            assert slow["wait_ms"] < fast["wait_ms"], (trial["slow_factor"], slow, fast)
            assert slow["slowdown_achieved"] > 1 and fast["slowdown_achieved"] == 1.0, (slow, fast)
        else:  # no barrier where none is asked for
            assert slow["busy_ms"] is None and slow["wait_ms"] is None


def test_zero_stages_0_to_3_run_on_cpu_and_compute_the_same_updates(tmp_path, shared_ray):
    _, trials = run_space(tmp_path, "zero_stages", "train_samples=128", "micro_batch_per_worker=16", address=shared_ray)
    assert sorted(r["zero_stage"] for r in trials) == [0, 1, 2, 3]
    assert {(r["engine"], r["num_workers"]) for r in trials} == {("deepspeed", 2)}
    # ZeRO partitions state, not arithmetic: in fp32 every stage takes the same steps.
    losses = [r["final_loss"] for r in trials]
    assert max(losses) == pytest.approx(min(losses), rel=1e-4), losses


def test_optimizers_each_at_its_scaling_rule_with_accuracy_per_epoch(tmp_path, shared_ray):
    sweep, trials = run_space(
        tmp_path,
        "optimizers",
        "num_workers=1",
        "epochs=2",
        "train_samples=128",
        "micro_batch_per_worker=32",
        address=shared_ray,
    )
    assert sorted(r["optimizer"] for r in trials) == ["adamw", "lamb", "sgd"]
    for r in trials:
        base, ref, rule = LR_RULES[r["optimizer"]]
        ratio = r["global_batch"] / ref
        assert r["lr"] == pytest.approx(base * (ratio if rule == "linear" else ratio**0.5))
        assert r["epochs"] == 2
    epochs = table(sweep, "epochs").to_pylist()
    for r in trials:
        rows = sorted((e for e in epochs if e["trial_id"] == r["trial_id"]), key=lambda e: e["epoch"])
        assert [e["epoch"] for e in rows] == [0, 1]
        assert all(0 <= e["val_accuracy"] <= 1 for e in rows)


@pytest.mark.skipif(torch.cuda.device_count() > 0, reason="this machine has a GPU: the space would run")
def test_precision_needs_a_gpu_and_is_skipped_with_a_message(tmp_path):
    proc = run_cli("--space", "precision", "--results-dir", str(tmp_path / "r"), "--no-dashboard")
    assert proc.returncode == 0, explain(proc)
    assert "space precision needs a GPU and this machine has none; skipped." in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "r").exists()


def test_engine_deepspeed_ddp_fsdp_and_accelerate_run_the_same_trial(tmp_path, shared_ray):
    # One trial of each engine: ZeRO 0 and FSDP2 resharding after forward stand for their axes.
    sets = ("engine=[deepspeed,ddp,fsdp,accelerate]", "zero_stage=0", "reshard_after_forward=true")
    _, trials = run_space(
        tmp_path, "engine", *sets, "train_samples=128", "micro_batch_per_worker=16", address=shared_ray
    )
    assert sorted(r["engine"] for r in trials) == ["accelerate", "ddp", "deepspeed", "fsdp"]
    assert {(r["num_workers"], r["zero_stage"], r["optimizer_steps"]) for r in trials} == {(2, 0, 4)}
    # Same data, weights, optimizer, clipping and accumulation: the engines take the same steps. In fp32 on
    # 2 ranks they come out bit-identical (a sum of two gradients has one order, and halving it is exact,
    # whether by all-reduce or reduce-scatter); the tolerance leaves room for the gradient-norm sums of
    # clipping, which each engine adds up in its own order.
    accelerate, ddp, ds, fsdp = sorted(trials, key=lambda r: r["engine"])
    for other in (ds, fsdp, accelerate):
        assert other["final_loss"] == pytest.approx(ddp["final_loss"], rel=1e-6), (other["engine"], other, ddp)
        assert other["val_accuracy"] == pytest.approx(ddp["val_accuracy"], abs=1e-6), other["engine"]
