"""The prepared copy of an image folder: built once, reused, rebuilt when the source changes."""

from __future__ import annotations

import os

import pytest

from tests.image_folders import make_image_folder, write_image
from trainers.imagefolder import decode_file, index_imagefolder
from trainers.prepared import SHORT_SIDE, prepare_imagefolder, prepared_root


@pytest.fixture
def folder(tmp_path):
    root = make_image_folder(tmp_path / "src", ("a", "b"), train_per_class=3, val_per_class=1)
    write_image(root / "train" / "a" / "big.jpg", 600, 300, 40)
    return root


def test_prepared_copy_has_the_same_layout_and_a_256_px_short_side(folder):
    prepared = prepare_imagefolder(str(folder))
    assert prepared.startswith(str(prepared_root(str(folder))))
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
