"""The link probe on a real local Ray (gloo ranks): ``--probe-links`` times the collectives before the trials,
the fits land in the sweep's ``links/links.parquet``, and the report (its table and predicted curves) and
``python -m analysis.predict`` predict from them; on a Ray cluster of two nodes the probe fits an intra-node and
an inter-node link."""

from __future__ import annotations

import re

import pyarrow.parquet as pq
import pytest
from ray.cluster_utils import Cluster

from analysis.prediction.link_model import links_from_table
from tests.integration.conftest import explain, run_cli


def test_a_sweep_with_probe_links_fits_its_links_and_predicts_beyond_its_ranks(tmp_path):
    # 4 ranks of half a CPU on 2 cores: oversubscribed, a functional check of the hold-out, not a measurement.
    # Three worker counts are the point (4 predicted from 1 and 2); each trial is as small as still times steps:
    # digits at their own 8 px, a global batch of 16 (micro batch 16, 8 and 4), 4 steps.
    proc = run_cli(
        "--space", "strong_scaling", "--set", "num_workers=[1,2,4]", "--set", "train_samples=64",
        "--set", "global_batch=16", "--set", "image_size=8", "--epochs", "1",
        "--set", "cpus_per_worker=0.5", "--repeats", "1", "--probe-links", "--results-dir", str(tmp_path),
        "--name", "probed", "--no-dashboard",
        timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, explain(proc)
    sweep = tmp_path / "probed"
    links = pq.read_table(sweep / "links" / "links.parquet").to_pylist()
    fits = {(r["link_class"], r["collective"]) for r in links if r["row"] == "fit"}
    assert ("intra_node", "all_reduce") in fits, fits
    points = [r for r in links if r["row"] == "point" and r["collective"] == "all_reduce"]
    assert points and all(r["time_s"] > 0 and r["backend"] == "gloo" for r in points)
    assert all(r["alpha_s"] >= 0 and r["beta_bytes_per_s"] > 0 for r in links if r["row"] == "fit")
    report = (sweep / "report" / "report.md").read_text(encoding="utf-8")
    assert "Predictions" in report
    # 4 ranks predicted from the 1- and 2-rank trials alone, beside its measurement, and what that says beyond 4
    assert re.search(r"held-out error at 4 ranks from 1 and 2: [+-]\d+\.\d%", report), report
    assert "predictions beyond 4 ranks carry at least that error" in report
    assert "beyond the 4 ranks calibrated" in report  # the rows at 8 and 16 ranks say they extrapolate
    assert (sweep / "report" / "predicted_scaling.png").is_file() and "predicted_scaling.png" in report
    predicted = run_cli(str(sweep), "--nodes", "1", "--gpus-per-node", "8", module="analysis.predict", timeout=300)
    assert predicted.returncode == 0, explain(predicted)
    assert "held-out error at 4 ranks from 1 and 2" in predicted.stdout, explain(predicted)
    table = pq.read_table(sweep / "report" / "predictions.parquet").to_pandas()
    assert set(table.loc[table["extrapolated"], "num_workers"]) == {8}


@pytest.fixture(scope="module")
def two_nodes():
    """Two Ray nodes on this host (a head and a worker raylet, each its own node id and 2 CPUs): the probe's
    inter-node group crosses them over loopback, so this pins the grouping by node id and the fits, not a network."""
    cluster = Cluster(initialize_head=True, connect=False, head_node_args={"num_cpus": 2})
    cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    yield cluster
    cluster.shutdown()


def test_the_probe_on_two_nodes_fits_intra_and_inter_node_links(two_nodes, tmp_path):
    proc = run_cli(
        "--address", two_nodes.address, "--device", "cpu", "--max-ranks", "2", "--min-bytes", "1024",
        "--max-bytes", "65536", "--repeats", "2", "--warmup", "1", "--collectives", "all_reduce,all_gather",
        "--results-dir", str(tmp_path), "--name", "two-nodes",
        module="raysweep.probe", timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, explain(proc)
    rows = pq.read_table(tmp_path / "two-nodes" / "links" / "links.parquet").to_pylist()
    points = [r for r in rows if r["row"] == "point"]
    assert {(r["link_class"], r["nodes"]) for r in points} == {("intra_node", 1), ("inter_node", 2)}
    assert all(r["ranks"] == 2 and r["time_s"] > 0 and r["backend"] == "gloo" for r in points)
    fits = {(r["link_class"], r["collective"]): r for r in rows if r["row"] == "fit"}
    assert set(fits) == {(c, k) for c in ("intra_node", "inter_node") for k in ("all_reduce", "all_gather")}
    assert all(f["alpha_s"] >= 0 and f["beta_bytes_per_s"] > 0 for f in fits.values())
    assert "inter_node" in proc.stdout and "intra_node" in proc.stdout  # the printed fits
    # The predictor takes each class's own fit: within a node the intra-node one, across nodes the inter-node one
    # (a 2-rank ring all-reduce: 2 alpha + n / beta).
    links = links_from_table(pq.read_table(tmp_path / "two-nodes" / "links" / "links.parquet"))
    for ranks_per_node, nodes, link_class in ((2, 1, "intra_node"), (1, 2, "inter_node")):
        fit = fits[(link_class, "all_reduce")]
        expected = 2 * fit["alpha_s"] + (1 << 20) / fit["beta_bytes_per_s"]
        assert links.collective_s("all_reduce", 1 << 20, ranks_per_node, nodes) == pytest.approx(expected)
