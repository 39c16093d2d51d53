"""The benchmark's CPU form runs end to end: plain PyTorch, the full stack and the input pipeline, one table."""

from __future__ import annotations

import json

from tests.integration.conftest import explain, run_cli


def test_quick_bench_prints_the_ratio_table_and_writes_its_results(tmp_path):
    proc = run_cli("--quick", "--out", str(tmp_path), module="raysweep.bench", timeout=900)
    assert proc.returncode == 0, explain(proc)
    result = json.loads((tmp_path / "bench.json").read_text())
    assert [r["batch"] for r in result["rows"]] == [16, 32]
    for row in result["rows"]:
        assert row["plain_img_s"] > 0 and row["stack_img_s"] > 0
        assert 0 < row["ratio"] < 10 and row["setup_s"] > 0 and row["teardown_s"] >= 0
    pipe = result["input_pipeline"]
    assert pipe["pipeline_img_s"] > pipe["model_img_s"] > 0  # the data path outruns the model
    assert 0 <= pipe["data_wait_fraction"] < 1 and pipe["cifar_img_s"] > 0
    assert "plain img/s" in proc.stdout and (tmp_path / "bench.md").is_file()
