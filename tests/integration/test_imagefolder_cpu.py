"""A real CPU sweep over a generated image folder: the CLI, Ray Train, DeepSpeed and the streamed loader."""

from __future__ import annotations

from tests.image_folders import make_image_folder
from tests.integration.conftest import explain, run_cli, table


def test_batch_grid_over_an_image_folder_completes_with_validation_accuracy(tmp_path):
    folder = make_image_folder(tmp_path / "images", ("a", "b", "c", "d"), train_per_class=24, val_per_class=6)
    proc = run_cli(
        "--space", "batch_grid", "--dataset", "imagefolder", "--data-dir", str(folder),
        "--set", "micro_batch_per_worker=[16]", "--set", "epochs=1", "--set", "image_size=32",
        "--no-dashboard", "--no-report", "--results-dir", str(tmp_path / "results"), "--name", "folder",
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, explain(proc)
    rows = table(tmp_path / "results" / "folder", "trials").to_pylist()
    assert len(rows) == 1 and rows[0]["status"] == "completed", rows[0]["error"]
    assert rows[0]["dataset"] == "imagefolder" and 0 <= rows[0]["val_accuracy"] <= 1
