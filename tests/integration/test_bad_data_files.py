"""Files an image folder's dataset cannot read, through the CLI started from a working directory of its own.

A JPEG cut short after its header passes planning's header check and fails on the rank that decodes it:
the sweep stops after that one trial (exit 2, one line naming the file), and the command it prints resumes
it once the file is fixed.  A text file named ``.jpg`` is refused by planning before any trial starts.
With ``skip_bad_files=true`` the trials train and count the files they skipped.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

from tests.image_folders import make_image_folder
from tests.integration.conftest import explain, run_cli, table
from tests.test_bad_files import text_as_jpeg, truncated_jpeg

# the smallest trials: the CPU default model at 8 px, one epoch, micro batch 4
TINY = ["--set", "micro_batch_per_worker=[4]", "--set", "epochs=1", "--set", "image_size=8"]
ERROR_LINE = "raysweep: error: "


def run_in(work: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """``python -m raysweep.tune ARGS`` from ``work``, as a user runs it there."""
    return run_cli(*args, cwd=work, timeout=timeout, repo_on_path=True)


def folder_in(work: Path) -> Path:
    """2 classes of 6 training images (+ a grey and a CMYK one) and 2 held-out ones, under ``work/images``."""
    return make_image_folder(work / "images", ("a", "b"), train_per_class=6, val_per_class=2)


def sweep_args(folder: Path, name: str, *extra: str) -> list[str]:
    """The sweep over ``folder`` as typed in its parent directory: relative paths."""
    return [
        "--space", "batch_grid", "--dataset", "imagefolder", "--data-dir", folder.name, *TINY, *extra,
        "--no-dashboard", "--no-report", "--results-dir", "results", "--name", name,
    ]  # fmt: skip


def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith(ERROR_LINE)]


def test_a_file_that_fails_to_decode_stops_the_sweep_after_one_trial_and_resumes_once_fixed(tmp_path):
    folder = folder_in(tmp_path)
    bad = truncated_jpeg(folder / "train" / "a" / "cut.jpg")  # a sound header: planning passes it
    proc = run_in(tmp_path, *sweep_args(folder, "stopped", "--repeats", "2"))
    assert proc.returncode == 2, explain(proc)
    (line,) = error_lines(proc)
    assert line.startswith(f"{ERROR_LINE}imagefolder: {bad} cannot be decoded ("), line
    assert "fix or remove it, then continue with: python -m raysweep.tune --resume " in line
    output = proc.stdout + proc.stderr
    assert "WorkerGroupError" not in output and "DataFileError" not in output, explain(proc)  # no traceback
    (row,) = table(tmp_path / "results" / "stopped", "trials").to_pylist()  # the other never started
    assert row["status"] == "failed" and str(bad) in row["error"]
    assert len(re.findall(r"trial \w+ \(.*\) started", proc.stdout)) == 1, explain(proc)

    bad.unlink()  # fixed by removing it
    (resume,) = re.findall(r"continue with: (python -m raysweep\.tune --resume \S+)", line)
    argv = shlex.split(resume)
    resumed = run_in(tmp_path, *argv[3:], "--no-report")
    assert resumed.returncode == 0, explain(resumed)
    rows = table(tmp_path / "results" / "stopped", "trials").to_pylist()
    assert len(rows) == 2 and all(r["status"] == "completed" for r in rows), rows
    assert row["trial_id"] in {r["trial_id"] for r in rows}  # the stopped trial ran again, under its id


def test_planning_refuses_a_file_whose_header_is_not_an_image_before_any_trial_starts(tmp_path):
    folder = folder_in(tmp_path)
    bad = text_as_jpeg(folder / "train" / "b" / "notes.jpg")
    proc = run_in(tmp_path, *sweep_args(folder, "refused", "--repeats", "1"), timeout=600)
    assert proc.returncode == 2, explain(proc)
    (line,) = error_lines(proc)
    assert line.startswith(f"{ERROR_LINE}imagefolder: {bad} cannot be decoded (not an image"), line
    assert "set skip_bad_files=true" in line
    assert not re.search(r"trial \w+ \(.*\) started", proc.stdout), explain(proc)
    assert not (tmp_path / "results" / "refused").exists()  # refused before the sweep began


def test_skip_bad_files_trains_and_counts_the_files_each_trial_skipped(tmp_path):
    folder = folder_in(tmp_path)
    # 14 sound training files and 2 bad ones: 16, whole micro batches of 4, so every file is read once
    truncated_jpeg(folder / "train" / "a" / "cut.jpg")
    text_as_jpeg(folder / "train" / "b" / "notes.jpg")
    proc = run_in(tmp_path, *sweep_args(folder, "skipping", "--repeats", "1", "--set", "skip_bad_files=true"))
    assert proc.returncode == 0, explain(proc)
    (row,) = table(tmp_path / "results" / "skipping", "trials").to_pylist()
    assert row["status"] == "completed" and row["skip_bad_files"] is True
    assert row["skipped_files"] == 2
    assert proc.stdout.count("skip_bad_files: trial") == 1, explain(proc)  # one warning for the trial
