"""The benchmark's CPU form runs end to end: plain PyTorch, the full stack, the input pipelines, the cold-process
floor and the sweep's duty cycle, one table."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

from tests.image_folders import make_image_folder
from tests.integration.conftest import REPO, explain, run_cli


def test_quick_bench_prints_the_ratio_table_and_writes_its_results(tmp_path):
    folder = make_image_folder(tmp_path / "images", ("a", "b"), train_per_class=24, val_per_class=4)
    # the quick form at its smallest: two micro batches (a row each), two timed windows a measurement
    proc = run_cli(
        *("--quick", "--batches", "8,16", "--repeats", "2", "--pipeline-seconds", "1"),
        *("--image-folder", str(folder), "--out", str(tmp_path)),
        module="raysweep.bench",
        timeout=900,
    )
    assert proc.returncode == 0, explain(proc)
    result = json.loads((tmp_path / "bench.json").read_text())
    assert [r["batch"] for r in result["rows"]] == [8, 16]
    for row in result["rows"]:
        assert row["plain_img_s"] > 0 and row["stack_img_s"] > 0
        assert 0 < row["ratio"] < 10 and row["setup_s"] > 0 and row["teardown_s"] >= 0
        assert row["ratio_min"] <= row["ratio"] <= row["ratio_max"] and len(row["plain_img_s_values"]) == 2
        # batch_grid runs each micro batch three times (its repeats), each trial one timed epoch per --repeats
        assert row["variant"] == "eager" and len(row["later_img_s"]) == 2 and len(row["stack_img_s_values"]) == 6
        assert row["stack_img_s_min"] <= row["first_img_s"] <= row["stack_img_s_max"]
        assert row["first_warmup_s"] > 0 and row["stack_warmup_s"] > 0  # the batch's first trial's and last's
    pipe = result["input_pipeline"]
    assert pipe["pipeline_img_s"] > pipe["model_img_s"] > 0  # the data path outruns the model
    assert 0 <= pipe["data_wait_fraction"] < 1 and pipe["cifar_img_s"] > 0
    figures = result["utilisation"]  # the trials' own FLOP count; a CPU has no spec peak, so no MFU
    assert figures["flops_per_sample"] > 0 and set(figures["mfu"].values()) == {None}
    assert "best hand-written" in proc.stdout and "warm-up s, first / last trial" in proc.stdout
    assert (tmp_path / "bench.md").is_file()
    # each hand-written variant is reported as it ends, with its range: a run cut short keeps what it measured
    first = result["plain"][0]
    assert (
        f"bench: hand-written eager at micro batch 8: {first['plain_img_s']:.1f} img/s "
        f"({first['plain_img_s_min']:.1f}-{first['plain_img_s_max']:.1f})"
    ) in proc.stderr
    assert result["command"].startswith("python -m raysweep.bench --quick --batches 8,16")

    floor = result["cold_floor"]
    phases = list(floor["since_launch_s"].values())
    assert phases == sorted(phases) and floor["floor_s"] == phases[-1] > floor["startup_s"] >= 0
    assert floor["first_process_floor_s"] > 0  # the process that warmed the caches, reported beside it
    against = result["setup_against_floor"]
    assert against["first_setup_s"] > 0 and against["median_later_setup_s"] > 0
    assert 0 < result["economy"]["duty_cycle"] < 1 and result["economy"]["wall_s"] > 0

    images = result["image_folder"]
    assert list(images["pipeline"]) == ["cpu"]  # no GPU: no GPU decode
    assert images["pipeline"]["cpu"]["images_per_s"] > 0 and images["pipeline"]["cpu"]["over_model"] > 0
    assert images["stack_img_s"] > 0 and 0 <= images["data_wait_fraction"] < 1
    assert "cold-process floor" in proc.stdout and "decode cpu" in proc.stdout

    # the H100 compile experiment's summary script reads the bench's results as they are written today
    script = REPO / "docs/results/h100-bench-compile/summarize.py"
    command = [sys.executable, str(script), str(tmp_path / "bench.json")]
    summary = subprocess.run(command, capture_output=True, text=True)
    assert summary.returncode == 0, summary.stderr
    rows = list(csv.DictReader(io.StringIO(summary.stdout)))
    assert {(int(r["batch"]), r["what"]) for r in rows} >= {(8, "eager"), (8, "stack"), (16, "eager"), (16, "stack")}
