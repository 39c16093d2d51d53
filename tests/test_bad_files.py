"""Files a dataset cannot read: the planning's header check, the typed error a rank raises, and skipping them.

Tiny real folders (``tests.image_folders``) with two kinds of bad file: a text file named ``.jpg`` (its header
is not an image's: the planning check finds it) and a JPEG cut short after its header (the header check
passes it; decoding fails, on the rank).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from raysweep.core.errors import DataFileError, UsageError
from raysweep.core.params import TrialParams
from raysweep.planning.checks import check_files
from raysweep.runtime.retry import retried
from tests.image_folders import make_image_folder
from trainers.data import imagefolder
from trainers.data.batches import Batches, FolderLoading
from trainers.data.datasets import load_dataset
from trainers.data.imagefolder import (
    DecodedImages,
    UnreadableFiles,
    collate_decoded,
    decode_file,
    header_fault,
    header_faults,
    unreadable_images,
)

REPO = Path(__file__).resolve().parents[1]


def truncated_jpeg(path: Path) -> Path:
    """A JPEG of noise (its scan data is most of the file) cut in half: a sound header over half its data."""
    pixels = np.random.default_rng(0).integers(0, 255, (96, 96, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, quality=90)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def text_as_jpeg(path: Path) -> Path:
    path.write_text("notes, not an image\n")
    return path


@pytest.fixture
def folder(tmp_path) -> Path:
    return make_image_folder(tmp_path / "images", ("a", "b"), train_per_class=4, val_per_class=2)


# ---- the error ----------------------------------------------------------------------------------


def test_the_error_is_one_line_naming_the_file_the_dataset_and_what_is_wrong():
    error = DataFileError("images/train/a/x.jpg", "imagefolder", "cannot be decoded (image file is truncated)")
    assert isinstance(error, UsageError)  # bad input: the CLI prints it as its one error line, exit 2
    assert str(error) == (
        "imagefolder: images/train/a/x.jpg cannot be decoded (image file is truncated); fix or remove it, "
        "or set skip_bad_files=true to skip the files that cannot be read"
    )
    stopped = error.resumable_with("python -m raysweep.tune --resume results/sweep")
    assert "\n" not in str(stopped)
    assert str(stopped).endswith(
        "fix or remove it, then continue with: python -m raysweep.tune --resume results/sweep "
        "(or run the sweep again with --set skip_bad_files=true)"
    )


def test_the_error_crosses_processes_with_its_fields():
    error = DataFileError("x.jpg", "imagefolder", "cannot be decoded (bad)", resume="r")
    again = pickle.loads(pickle.dumps(error))
    assert (again.path, again.dataset, again.reason, again.resume, str(again)) == (
        "x.jpg",
        "imagefolder",
        "cannot be decoded (bad)",
        "r",
        str(error),
    )


def test_a_data_error_is_never_retried_however_many_restarts_are_allowed():
    wrapped = RuntimeError("worker group failed")
    wrapped.__cause__ = DataFileError("x.jpg", "imagefolder", "cannot be decoded (bad)")
    assert not retried(wrapped, attempt=0, max_failures=3)
    assert retried(RuntimeError("a rank was killed"), attempt=0, max_failures=3)


# ---- the header check ---------------------------------------------------------------------------


def test_sound_images_pass_the_header_check(folder):
    assert all(header_fault(str(f)) is None for f in folder.rglob("*.*"))


def test_a_text_file_named_jpg_fails_the_header_check(folder):
    bad = text_as_jpeg(folder / "train" / "a" / "notes.jpg")
    assert header_fault(str(bad)) == "cannot be decoded (not an image torchvision or PIL reads)"


def test_an_empty_file_fails_the_header_check(folder):
    (folder / "train" / "b" / "empty.png").write_bytes(b"")
    assert header_fault(str(folder / "train" / "b" / "empty.png")) is not None


def test_a_jpeg_cut_short_after_its_header_passes_the_header_check_but_not_decoding(folder):
    bad = truncated_jpeg(folder / "train" / "a" / "cut.jpg")
    assert header_fault(str(bad)) is None  # the check reads headers only: cheap, and blind to this
    with pytest.raises(DataFileError, match="cut.jpg cannot be decoded") as raised:
        decode_file(str(bad), 3)
    assert (raised.value.path, raised.value.dataset) == (str(bad), "imagefolder")


def test_the_folder_check_names_every_bad_file_in_order_with_progress_lines(folder, monkeypatch, capsys):
    first = text_as_jpeg(folder / "train" / "a" / "notes.jpg")
    second = text_as_jpeg(folder / "val" / "b" / "notes.jpg")
    truncated_jpeg(folder / "train" / "b" / "cut.jpg")  # passes: decoding finds it
    monkeypatch.setattr(imagefolder, "PROGRESS_EVERY", 5)
    faults = unreadable_images(str(folder))
    assert [f.path for f in faults] == [str(first), str(second)]
    total = len(list(folder.rglob("*.*")))
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"raysweep: imagefolder: checked the headers of {n}/{total} files" for n in range(5, total + 1, 5)]


def test_header_faults_read_in_threads_give_the_serial_answer(folder):
    for i in range(3):
        text_as_jpeg(folder / "train" / "a" / f"notes{i}.jpg")
    files = sorted(str(f) for f in folder.rglob("*.*"))
    assert [f.path for f in header_faults(files, "imagefolder", threads=8)] == [
        f.path for f in header_faults(files, "imagefolder", threads=1)
    ]


def folder_params(folder: Path, **values) -> TrialParams:
    return TrialParams(dataset="imagefolder", data_dir=str(folder), **values)


def test_planning_refuses_a_folder_with_a_bad_header_naming_the_file(folder):
    bad = text_as_jpeg(folder / "train" / "a" / "notes.jpg")
    with pytest.raises(DataFileError, match=f"imagefolder: {bad} cannot be decoded"):
        check_files([folder_params(folder, seed=s) for s in range(3)])


def test_planning_notes_the_files_a_skipping_sweep_will_skip(folder):
    text_as_jpeg(folder / "train" / "a" / "notes.jpg")
    notes = check_files([folder_params(folder, skip_bad_files=True, seed=s) for s in range(3)])
    assert len(notes) == 1 and "imagefolder: 1 file(s) of" in notes[0] and "notes.jpg" in notes[0]


def test_planning_passes_a_sound_folder_and_other_datasets(folder):
    assert check_files([folder_params(folder), TrialParams(dataset="digits")]) == []


# ---- reading around a bad file on the rank ------------------------------------------------------


def test_a_bad_sample_is_read_around_and_its_error_rides_with_the_next_readable_file(folder):
    bad = truncated_jpeg(folder / "train" / "a" / "0cut.jpg")  # sorts first in class a
    split = load_dataset("imagefolder", str(folder)).folder.train
    i = split.files.index(str(bad))
    dataset = DecodedImages(split, 16, 3, recipe=None, seed=0)
    image, label, unreadable = dataset[i]
    next_image, next_label, none = dataset[i + 1]
    assert torch.equal(image, next_image) and label == next_label and none == []
    assert [e.path for e in unreadable] == [str(bad)]
    pixels, labels, errors = collate_decoded([dataset[i], dataset[i + 1]])
    assert pixels.shape == (2, 3, 16, 16) and labels.tolist() == [label, label]
    assert [e.path for e in errors] == [str(bad)]


def test_without_skipping_the_first_bad_file_stops_and_with_skipping_each_is_counted_once():
    errors = [DataFileError(p, "imagefolder", "cannot be decoded (bad)") for p in ("x.jpg", "y.jpg", "x.jpg")]
    with pytest.raises(DataFileError, match="x.jpg"):
        UnreadableFiles(skip=False).met(errors)
    counted = UnreadableFiles(skip=True)
    counted.met(errors)
    counted.met(errors[:1])
    assert list(counted.found) == ["x.jpg", "y.jpg"]


def batches_of(folder: Path, skip: bool, workers: int) -> Batches:
    loading = FolderLoading(workers=workers, skip_bad_files=skip)
    data = load_dataset("imagefolder", str(folder))
    return Batches(data, torch.device("cpu"), 16, torch.float32, 0, 1, seed=0, loading=loading)


@pytest.mark.parametrize("workers", [0, 1])  # 1: the error crosses a loader process
def test_a_rank_stops_at_a_bad_file_with_its_typed_error(folder, workers):
    bad = truncated_jpeg(folder / "train" / "a" / "cut.jpg")
    batches = batches_of(folder, skip=False, workers=workers)
    with pytest.raises(DataFileError) as raised:
        list(batches.train(epoch=0, micro_batch=4, num_batches=3))
    assert raised.value.path == str(bad) and raised.value.reason.startswith("cannot be decoded")


@pytest.mark.parametrize("workers", [0, 1])
def test_a_skipping_rank_keeps_its_batches_full_and_counts_each_bad_file_once(folder, workers):
    bad = [truncated_jpeg(folder / "train" / "a" / "cut.jpg"), text_as_jpeg(folder / "val" / "b" / "notes.jpg")]
    batches = batches_of(folder, skip=True, workers=workers)
    split = batches.data.folder.train
    for epoch in range(2):  # every file read each epoch: the bad one twice
        train = list(batches.train(epoch=epoch, micro_batch=4, num_batches=len(split) // 4))
        assert [x.shape[0] for x, _ in train] == [4] * (len(split) // 4)
    assert sum(y.shape[0] for _, y in batches.validation(micro_batch=4)) == len(batches.data.folder.val)
    assert sorted(batches.unreadable.found) == sorted(str(p) for p in bad)


# ---- the stop, in the CLI's process ---------------------------------------------------------------

# Tune's stop request (its SIGUSR1 handler) recorded; a data error posted during the "fit".
SCRIPT = """
import signal
import raysweep.interrupt as interrupt
from raysweep.core.errors import DataFileError

asked = []
signal.signal(signal.SIGUSR1, lambda s, f: asked.append(s))
interrupt.resumable("results/sweep")
interrupt.fitting(True)
interrupt.stop_for_data(DataFileError("images/x.jpg", "imagefolder", "cannot be decoded (bad)"))
interrupt.stop_for_data(DataFileError("images/y.jpg", "imagefolder", "cannot be decoded (bad)"))
print("tune asked to stop:", len(asked), flush=True)
try:
    interrupt.fitting(False)
except DataFileError as e:
    print("raised:", e)
"""


def test_a_data_error_stops_tune_once_and_is_raised_with_the_resume_command_when_its_run_returns():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "tune asked to stop: 1" in proc.stdout
    (raised,) = [line for line in proc.stdout.splitlines() if line.startswith("raised: ")]
    assert raised.startswith("raised: imagefolder: images/x.jpg cannot be decoded (bad); fix or remove it")
    # the resume command as the user runs it from the directory they started the sweep in
    assert "continue with: python -m raysweep.tune --resume results/sweep " in raised


def test_a_ranks_traceback_of_a_data_error_is_dropped_from_the_screen_and_other_tracebacks_are_kept():
    from raysweep.runtime.ray_logs import without_dropped_tracebacks

    data_error = [
        "Error in training function:",
        "Traceback (most recent call last):",
        '  File "trainers/data/batches.py", line 196, in prepare',
        "raysweep.core.errors.DataFileError: imagefolder: x.jpg cannot be decoded (bad); fix or remove it",
        "",
    ]
    other = ["Error in training function:", "Traceback (most recent call last):", "ValueError: boom"]
    lines = ["raysweep: before", *data_error, *other, "raysweep: after"]
    assert without_dropped_tracebacks(lines) == ["raysweep: before", *other, "raysweep: after"]


def test_a_prepared_copy_has_no_copy_of_a_bad_file_and_its_trials_read_that_one_from_the_source(folder):
    from trainers.data.node_cache import cache_root
    from trainers.data.prepared import prepared_index

    bad = truncated_jpeg(folder / "train" / "a" / "cut.jpg")
    index = load_dataset("imagefolder", str(folder)).folder
    copied = prepared_index(str(folder), index)
    assert [f for f in copied.train.files if not f.startswith(str(cache_root(str(folder))))] == [str(bad)]
    with pytest.raises(DataFileError, match="cut.jpg cannot be decoded"):  # as it fails without the copy
        decode_file(str(bad), 3)
