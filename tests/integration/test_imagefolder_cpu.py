"""A real CPU sweep over a generated image folder: the CLI, Ray Train, DeepSpeed and the streamed loader."""

from __future__ import annotations

import pytest

from tests.image_folders import make_image_folder
from tests.integration.conftest import explain, on_shared, run_cli, table


def test_batch_grid_over_an_image_folder_trains_alike_from_the_source_and_its_pixel_copy(tmp_path, shared_ray):
    folder = make_image_folder(tmp_path / "images", ("a", "b", "c", "d"), train_per_class=24, val_per_class=6)
    proc = run_cli(
        "--space", "batch_grid", "--repeats", "1", "--dataset", "imagefolder", "--data-dir", str(folder),
        "--set", "micro_batch_per_worker=[16]", "--set", "epochs=1", "--set", "image_size=32",
        "--set", "prepare=[off,pixels]",
        "--no-dashboard", "--no-report", "--results-dir", str(tmp_path / "results"), "--name", "folder",
        *on_shared(shared_ray),
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, explain(proc)
    rows = table(tmp_path / "results" / "folder", "trials").to_pylist()
    assert sorted(r["prepare"] for r in rows) == ["off", "pixels"]
    for row in rows:
        assert row["status"] == "completed", row["error"]
        assert row["dataset"] == "imagefolder" and 0 <= row["val_accuracy"] <= 1
    # the fixture's images are smaller than the copy's short side, so the copy holds the decoded source
    # pixels and a trial on it draws the same crops: the same seed trains to the same figures
    source, copy = sorted(rows, key=lambda r: r["prepare"])
    assert copy["val_accuracy"] == source["val_accuracy"]
    assert copy["final_loss"] == pytest.approx(source["final_loss"], rel=1e-4)
    assert list((folder / ".raysweep-prepared").glob("*-pixels-256-c3/train/records.npy"))
