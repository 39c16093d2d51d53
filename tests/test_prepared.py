"""The prepared copy of an image folder: built once, reused, rebuilt when the source changes."""

from __future__ import annotations

import os

import pytest
import torch

from raysweep.core.params import TrialParams
from tests.image_folders import class_value, folder_with_a_large_image, write_image
from trainers.data.batches import make_batches
from trainers.data.datasets import load_dataset
from trainers.data.imagefolder import decode_file, index_imagefolder
from trainers.data.node_cache import cache_root
from trainers.data.prepared import SHORT_SIDE, prepare_imagefolder


@pytest.fixture
def folder(tmp_path):
    return folder_with_a_large_image(tmp_path / "src", train_per_class=3, val_per_class=1)


def test_prepared_copy_has_the_same_layout_and_a_256_px_short_side(folder):
    prepared = prepare_imagefolder(str(folder))
    assert prepared.startswith(str(cache_root(str(folder))))
    source, copy = index_imagefolder(str(folder)), index_imagefolder(prepared)
    assert copy.classes == source.classes and copy.train.labels == source.train.labels
    assert len(copy.val.files) == len(source.val.files)
    big = next(f for f in copy.train.files if "big" in f)
    assert decode_file(big, 3).shape == (3, SHORT_SIDE, 512)
    small = next(f for f in copy.train.files if f.endswith("0.jpg"))
    assert decode_file(small, 3).shape == (3, 30, 40)  # smaller images are not upscaled


def test_second_call_reuses_the_build_and_a_changed_source_rebuilds(folder):
    first = prepare_imagefolder(str(folder))
    marker = os.path.join(first, "train", "a", "0.jpg")
    built_at = os.stat(marker).st_mtime_ns
    assert prepare_imagefolder(str(folder)) == first and os.stat(marker).st_mtime_ns == built_at
    write_image(folder / "train" / "b" / "new.jpg", 20, 20, 100)
    second = prepare_imagefolder(str(folder))
    assert second != first and any("new" in f for f in index_imagefolder(second).train.files)


def large_image_folder(root, short_side: int = SHORT_SIDE + 24):
    """Two classes of JPEGs larger than the copy's short side: a folder where the copy pays."""
    for split, count in (("train", 3), ("val", 1)):
        for label, cls in enumerate(("a", "b")):
            (root / split / cls).mkdir(parents=True)
            for i in range(count):
                write_image(root / split / cls / f"{i}.jpg", short_side + 40, short_side, class_value(label))
    return root


def trial_batches(folder, **params):
    """What a trial's rank reads: make_batches of the loaded dataset, on the CPU at 32 px unless told."""
    trial = TrialParams(dataset="imagefolder", data_dir=str(folder), **params)
    data = load_dataset("imagefolder", str(folder))
    size = trial.image_size or 32
    return make_batches(trial, data, torch.device("cpu"), size, torch.float32, rank=0)


def test_a_trial_reads_the_copy_where_it_pays_and_a_second_trial_reuses_it(tmp_path):
    folder = large_image_folder(tmp_path / "big")
    source = index_imagefolder(str(folder))
    first = trial_batches(folder).data.folder
    root = str(cache_root(str(folder)))
    assert all(f.startswith(root) for f in first.train.files + first.val.files)
    assert first.train.labels == source.train.labels and first.classes == source.classes
    assert decode_file(first.train.files[0], 3).shape[-2] == SHORT_SIDE
    built_at = [os.stat(f).st_mtime_ns for f in first.train.files]

    second = trial_batches(folder).data.folder  # the next trial on this node
    assert second.train.files == first.train.files
    assert [os.stat(f).st_mtime_ns for f in second.train.files] == built_at  # reused, not rebuilt
    x, y = next(trial_batches(folder).train(0, 4, 1))
    assert x.shape == (4, 3, 32, 32) and y.shape == (4,)

    write_image(folder / "train" / "a" / "3.jpg", SHORT_SIDE + 80, SHORT_SIDE + 40, class_value(0))
    changed = trial_batches(folder).data.folder
    assert os.path.dirname(os.path.dirname(changed.train.files[0])) != os.path.dirname(
        os.path.dirname(first.train.files[0])
    )  # a new key: the copy was rebuilt from the changed source
    assert len(changed.train.files) == len(first.train.files) + 1


def test_small_sources_large_resolutions_and_prepare_off_read_the_source(tmp_path, folder):
    small = trial_batches(folder).data.folder  # the fixture's images are mostly 20-48 px
    assert small.train.files == index_imagefolder(str(folder)).train.files
    big = large_image_folder(tmp_path / "big")
    source = index_imagefolder(str(big)).train.files
    assert trial_batches(big, image_size=256).data.folder.train.files == source  # validation wants 292 px
    assert trial_batches(big, prepare="off").data.folder.train.files == source
    assert not cache_root(str(big)).exists()


def test_a_build_across_processes_writes_what_one_process_writes(tmp_path):
    one = prepare_imagefolder(str(large_image_folder(tmp_path / "one")))
    pool = prepare_imagefolder(str(large_image_folder(tmp_path / "pool")), workers=2)
    files = sorted(os.path.relpath(f, one) for f in index_imagefolder(one).train.files)
    assert sorted(os.path.relpath(f, pool) for f in index_imagefolder(pool).train.files) == files
    for name in files:
        assert torch.equal(decode_file(os.path.join(one, name), 3), decode_file(os.path.join(pool, name), 3))
