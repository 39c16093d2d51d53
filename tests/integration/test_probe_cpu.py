"""The link probe on a real local Ray (gloo ranks): ``--probe-links`` times the collectives before the trials,
the fits land in the sweep's ``links/links.parquet``, and the report and ``python -m analysis.predict`` predict
from them."""

from __future__ import annotations

import pyarrow.parquet as pq

from tests.integration.conftest import explain, run_cli


def test_a_sweep_with_probe_links_fits_its_links_and_predicts_beyond_its_ranks(tmp_path):
    proc = run_cli(
        "--space", "strong_scaling", "--set", "num_workers=[1,2]", "--set", "train_samples=256", "--epochs", "1",
        "--repeats", "1", "--probe-links", "--results-dir", str(tmp_path), "--name", "probed", "--no-dashboard",
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
    assert "Predictions" in (sweep / "report" / "report.md").read_text(encoding="utf-8")
    predicted = run_cli(str(sweep), "--nodes", "1", "--gpus-per-node", "4", module="analysis.predict", timeout=300)
    assert predicted.returncode == 0, explain(predicted)
    assert (sweep / "report" / "predictions.parquet").is_file()
