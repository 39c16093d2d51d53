"""The scripts kept under docs/results run, in a smoke form on tiny inputs on the CPU: a script no test runs is
not kept there (``test_every_script_under_docs_results_is_run_by_a_test``). The Ray-using ones are in
tests/integration/ (test_cpu16_validation_smoke.py, test_cpu_examples_smoke.py, test_bench_cpu.py)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.image_folders import make_image_folder

ROOT = Path(__file__).resolve().parents[1]
ENV = os.environ | {"PYTHONPATH": str(ROOT)}


def run(script: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, str(ROOT / script), *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_every_script_under_docs_results_is_run_by_a_test():
    listed = subprocess.run(["git", "ls-files", "docs/results"], cwd=ROOT, capture_output=True, text=True, check=True)
    scripts = [p for p in listed.stdout.splitlines() if p.endswith((".py", ".sh"))]
    tests = "\n".join(path.read_text() for path in (ROOT / "tests").rglob("test_*.py"))
    assert scripts and not [s for s in scripts if s not in tests], [s for s in scripts if s not in tests]


def test_summarize_logs_writes_an_experiments_long_table_from_its_log(tmp_path):
    (tmp_path / "ab.log").write_text(
        "base 1 rc=0 exited 104.5 s after launch\nnew 1 rc=0 exited 67.2 s after launch\n"
        "base\n  duty_cycle: median 0.394 (0.248-0.402) runs [0.248, 0.394, 0.402]\n"
    )
    run("docs/results/summarize_logs.py", str(tmp_path))
    with open(tmp_path / "summary.csv", newline="") as f:
        rows = {(r["source"], r["record"], r["quantity"]): float(r["value"]) for r in csv.DictReader(f)}
    assert rows[("ab", "base 1", "exited after launch")] == 104.5
    assert rows[("ab", "base", "duty_cycle median")] == 0.394


def test_the_two_gpu_prediction_runs_from_its_committed_tables(tmp_path):
    run("docs/results/h200x2-strong-scaling/predict.py", "--out", str(tmp_path / "prediction.csv"))
    with open(tmp_path / "prediction.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["num_workers"]) for r in rows] == [1, 2]
    assert rows[0]["compute_source"] == "measured" and float(rows[0]["error"]) == 0  # the trial it is calibrated on
    # the 2-rank run is held out: predicted from the 1-rank trial, as the committed table (and the docs) say
    with open(ROOT / "docs/results/h200x2-strong-scaling/summary-prediction.csv", newline="") as f:
        committed = list(csv.DictReader(f))
    assert rows[1]["compute_source"] == "proportional"
    assert float(rows[1]["error"]) == pytest.approx(float(committed[1]["error"]), abs=1e-4) != 0


def test_the_pixel_reader_stages_time_each_stage_on_a_tiny_folder(tmp_path):
    folder = make_image_folder(tmp_path / "images", ("a", "b"), train_per_class=12, val_per_class=2)
    args = ["--workers", "1", "--batch", "4", "--seconds", "0.2", "--repeats", "1"]
    proc = run("docs/results/h200-pixel-reader/stages.py", str(folder), *args)
    assert "worker processes" in proc.stdout and "threads 2" in proc.stdout


def test_summarize_sweep_writes_one_row_per_trial_in_start_order_lists_as_json(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "sweep" / "trials").mkdir(parents=True)
    for trial, started in (("b", "2026-01-02"), ("a", "2026-01-01")):
        table = pa.table({"trial_id": [trial], "started_at": [started], "throughput": [1.5], "node_ids": [["n1"]]})
        pq.write_table(table, tmp_path / "sweep" / "trials" / f"{trial}.parquet")
    run("docs/results/summarize_sweep.py", "sweep", cwd=tmp_path)
    with open(tmp_path / "sweep" / "summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["trial_id"] for r in rows] == ["a", "b"] and rows[0]["node_ids"] == '["n1"]'
