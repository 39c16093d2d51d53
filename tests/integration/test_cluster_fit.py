"""Fitting trials to a cluster of several Ray nodes (logical nodes on this machine, real raylets).

The sweep refuses a trial the cluster can never hold before anything starts; while it runs,
trials go concurrently exactly as far as their ranks fit, and a big trial at the head of the
queue neither deadlocks the sweep nor keeps smaller ones waiting once it is done.
"""

from __future__ import annotations

import pytest
from ray.cluster_utils import Cluster

from tests.integration.conftest import explain, run_cli, table

NODE_CPUS = (1, 2, 2)  # head plus two workers: 5 logical CPUs over 3 nodes


@pytest.fixture(scope="module")
def three_nodes():
    cluster = Cluster(initialize_head=True, connect=False, head_node_args={"num_cpus": NODE_CPUS[0]})
    for cpus in NODE_CPUS[1:]:
        cluster.add_node(num_cpus=cpus)
    cluster.wait_for_nodes()
    yield cluster
    cluster.shutdown()


def test_trial_bigger_than_the_cluster_is_refused_before_starting(three_nodes, tmp_path):
    proc = run_cli(
        "--space",
        "batch_grid",
        "--address",
        three_nodes.address,
        "--results-dir",
        str(tmp_path),
        "--set",
        "num_workers=6",
        "--dry-run",
    )
    assert proc.returncode == 2, explain(proc)
    assert "needs 6 x (1 CPU) PACK" in proc.stderr and "has 2 CPU + 0 GPU, 2 CPU + 0 GPU, 1 CPU + 0 GPU;" in proc.stderr
    proc = run_cli(
        "--space",
        "batch_grid",
        "--address",
        three_nodes.address,
        "--results-dir",
        str(tmp_path),
        "--set",
        "num_workers=4",
        "--set",
        "placement_strategy=STRICT_SPREAD",
        "--dry-run",
    )
    assert proc.returncode == 2 and "STRICT_SPREAD" in proc.stderr, explain(proc)
    assert not any(tmp_path.iterdir())


def test_trials_run_concurrently_as_far_as_they_fit(three_nodes, tmp_path):
    """A 4-rank trial fills the cluster alone; after it the three small ones (2 spread + 1 + 1) share it."""
    space = tmp_path / "fit.yaml"
    space.write_text(
        "description: fit test\n"
        "axes:\n"
        "  - {num_workers: [4], placement_strategy: [PACK]}\n"
        "  - {num_workers: [2], placement_strategy: [STRICT_SPREAD]}\n"
        "  - {num_workers: [1], micro_batch_per_worker: [8, 16]}\n"
        "fixed: {epochs: 1, train_samples: 64, micro_batch_per_worker: 8, warmup_steps: 0}\n"
    )
    proc = run_cli(
        "--space",
        str(space),
        "--address",
        three_nodes.address,
        "--results-dir",
        str(tmp_path / "r"),
        "--name",
        "fit",
        "--no-report",
        timeout=900,
    )
    assert proc.returncode == 0, explain(proc)
    rows = table(tmp_path / "r" / "fit", "trials").to_pylist()
    assert len(rows) == 4 and all(r["status"] == "completed" for r in rows), [r["error"] for r in rows]
    big = next(r for r in rows if r["num_workers"] == 4)
    small = [r for r in rows if r["num_workers"] < 4]
    # capacity respected: nothing ran beside the 4-rank trial (4 of 5 CPUs, plus drivers)
    assert all(r["started_at"] >= big["finished_at"] or r["finished_at"] <= big["started_at"] for r in small)
    # no idling: the three small trials (2 + 1 + 1 ranks) all ran at the same time
    assert max(r["started_at"] for r in small) < min(r["finished_at"] for r in small)
    spread = next(r for r in rows if r["placement_strategy"] == "STRICT_SPREAD")
    assert spread["num_nodes"] == 2 and len(set(spread["node_ids"])) == 2


def test_placement_space_packs_on_one_node_and_spreads_over_two(three_nodes, tmp_path):
    """The bundled placement space, shrunk to 2 ranks: STRICT_PACK lands on one node, STRICT_SPREAD on two."""
    proc = run_cli("--space", "placement", "--address", three_nodes.address, "--results-dir", str(tmp_path),
                   "--name", "placement", "--set", "num_workers=[2]", "--set", "micro_batch_per_worker=8",
                   "--set", "train_samples=64", "--epochs", "1", "--no-report", timeout=900)  # fmt: skip
    assert proc.returncode == 0, explain(proc)
    rows = {r["placement_strategy"]: r for r in table(tmp_path / "placement", "trials").to_pylist()}
    assert set(rows) == {"STRICT_PACK", "STRICT_SPREAD"}
    assert all(r["status"] == "completed" for r in rows.values())
    assert rows["STRICT_PACK"]["num_nodes"] == 1 and rows["STRICT_SPREAD"]["num_nodes"] == 2
