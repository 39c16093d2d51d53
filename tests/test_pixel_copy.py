"""The pixel copy of an image folder: what it stores, what reads it, when it is rebuilt, what it refuses."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from tests.image_folders import folder_with_a_large_image, write_image
from tests.test_prepared import large_image_folder, trial_batches
from trainers.data.crops import CropRecipe, back_to_back, crop_images, resized_to
from trainers.data.imagefolder import index_imagefolder
from trainers.data.node_cache import cache_root
from trainers.data.pixel_copy import (
    RECORDS,
    PixelSplit,
    chunk_name,
    estimated_bytes,
    pixel_copy,
    read_batches,
)


@pytest.fixture
def folder(tmp_path):
    """Small JPEGs and PNGs of four shapes, a grey and a CMYK file, and one larger than the copy's short side."""
    return folder_with_a_large_image(tmp_path / "src", train_per_class=4, val_per_class=2)


def test_every_image_reads_back_as_decoded_and_resized_to_256_on_its_short_side(folder):
    source = index_imagefolder(str(folder))
    copy = pixel_copy(str(folder), source, image_size=224, in_chans=3)
    assert copy.classes == source.classes
    for stored, files in ((copy.train, source.train), (copy.val, source.val)):
        assert isinstance(stored, PixelSplit) and stored.labels == files.labels and len(stored) == len(files)
        for i in range(len(files)):
            assert torch.equal(stored.read(i, 3), resized_to(files.read(i, 3), 256)), files.files[i]
    big = source.train.files.index(str(folder / "train" / "a" / "big.jpg"))
    assert copy.train.read(big, 3).shape == (3, 256, 512)


def test_a_one_channel_trial_gets_a_copy_of_its_own(folder):
    source = index_imagefolder(str(folder))
    grey = pixel_copy(str(folder), source, image_size=224, in_chans=1)
    assert grey.train.read(0, 1).shape[0] == 1 and torch.equal(grey.train.read(0, 1), source.train.read(0, 1))
    assert grey.train.folder != pixel_copy(str(folder), source, image_size=224, in_chans=3).train.folder


def test_the_second_call_reuses_the_build_and_a_changed_source_rebuilds(folder):
    first = pixel_copy(str(folder), index_imagefolder(str(folder)), 224, 3)
    records = os.path.join(first.train.folder, RECORDS)
    built_at = os.stat(records).st_mtime_ns
    again = pixel_copy(str(folder), index_imagefolder(str(folder)), 224, 3)
    assert again.train.folder == first.train.folder and os.stat(records).st_mtime_ns == built_at
    write_image(folder / "train" / "b" / "new.jpg", 20, 20, 100)
    changed = pixel_copy(str(folder), index_imagefolder(str(folder)), 224, 3)
    assert changed.train.folder != first.train.folder and len(changed.train) == len(first.train) + 1


def test_a_build_across_processes_stores_what_one_process_stores(tmp_path):
    one_dir, pool_dir = large_image_folder(tmp_path / "one"), large_image_folder(tmp_path / "pool")
    one = pixel_copy(str(one_dir), index_imagefolder(str(one_dir)), 224, 3)
    pool = pixel_copy(str(pool_dir), index_imagefolder(str(pool_dir)), 224, 3, workers=2)
    assert np.array_equal(one.train.records, pool.train.records)
    assert all(torch.equal(one.train.read(i, 3), pool.train.read(i, 3)) for i in range(len(one.train)))


def test_larger_resolutions_keep_what_their_validation_crop_needs(tmp_path):
    big = large_image_folder(tmp_path / "big", short_side=320)  # validation at 256 px resizes to 292
    copy = pixel_copy(str(big), index_imagefolder(str(big)), image_size=256, in_chans=3)
    assert copy.train.read(0, 3).shape[-2] == 292


def test_a_trial_on_the_pixel_copy_gets_the_batches_of_the_decoded_source(folder):
    """The fixture's small images are stored unresized, so the crops (drawn from seed, epoch, index) match."""
    on_copy, on_source = trial_batches(folder, prepare="pixels"), trial_batches(folder, prepare="off")
    assert isinstance(on_copy.data.folder.train, PixelSplit)
    assert str(cache_root(str(folder))) in on_copy.data.folder.train.folder
    for epoch in (0, 1):
        for (x, y), (x0, y0) in zip(on_copy.train(epoch, 4, 2), on_source.train(epoch, 4, 2), strict=True):
            assert torch.equal(x, x0) and torch.equal(y, y0)
    for (x, y), (x0, y0) in zip(on_copy.validation(4), on_source.validation(4), strict=True):
        assert torch.equal(x, x0) and torch.equal(y, y0)


def test_threads_read_each_micro_batch_into_one_tensor_in_order_and_it_crops_as_single_images_do(folder):
    copy = pixel_copy(str(folder), index_imagefolder(str(folder)), 224, 3)
    order = list(range(len(copy.train)))[::-1] * 3
    assert len(order) > 5 * (3 + 2) and len(order) % 5  # more batches than 3 threads read ahead, the last short
    labels_seen = []
    for (flat, shapes), labels in read_batches(copy.train, order, micro_batch=5, threads=3, pin=False):
        assert flat.dtype == torch.uint8 and flat.dim() == 1 and shapes.shape == (len(labels), 3)
        singles = [copy.train.read(i, 3) for i in order[len(labels_seen) : len(labels_seen) + len(labels)]]
        one_by_one = back_to_back(singles)
        assert torch.equal(flat, one_by_one[0]) and torch.equal(shapes, one_by_one[1])
        for recipe in (None, CropRecipe()):
            expected = crop_images(one_by_one, 16, recipe, torch.Generator().manual_seed(3))
            assert torch.equal(crop_images((flat, shapes), 16, recipe, torch.Generator().manual_seed(3)), expected)
        labels_seen += labels.tolist()
    assert labels_seen == [copy.train.labels[i] for i in order]


def test_a_reader_closed_early_leaves_no_threads_behind(folder):
    copy = pixel_copy(str(folder), index_imagefolder(str(folder)), 224, 3)
    batches = read_batches(copy.train, list(range(len(copy.train))) * 4, micro_batch=2, threads=3, pin=False)
    next(batches)
    assert any(t.name.startswith("raysweep-pixels") for t in threading.enumerate())
    batches.close()
    assert not any(t.name.startswith("raysweep-pixels") for t in threading.enumerate())


def test_a_truncated_chunk_fails_the_read_naming_its_file(folder):
    copy = pixel_copy(str(folder), index_imagefolder(str(folder)), 224, 3)
    last = len(copy.train) - 1
    chunk = os.path.join(copy.train.folder, chunk_name(int(copy.train.records[last, 0])))
    os.truncate(chunk, os.path.getsize(chunk) - 1)
    with pytest.raises(OSError, match=rf"{chunk}: image {last} of the pixel copy ends past the file's"):
        list(read_batches(copy.train, list(range(len(copy.train))), micro_batch=4, threads=2, pin=False))


def test_size_estimate_counts_resized_pixels(tmp_path):
    big = large_image_folder(tmp_path / "big", short_side=300)  # 340 x 300 files: 290 x 256 stored
    index = index_imagefolder(str(big))
    files = len(index.train) + len(index.val)
    assert estimated_bytes(index, 256, 3) == pytest.approx(files * 3 * 340 * 300 * (256 / 300) ** 2, rel=1e-6)
    copy = pixel_copy(str(big), index, 224, 3)
    chunks = [Path(s.folder).glob("*.u8") for s in (copy.train, copy.val)]
    assert sum(p.stat().st_size for found in chunks for p in found) == files * 3 * 290 * 256


def test_a_copy_that_does_not_fit_stops_before_building_and_says_how_much_it_needs(folder, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10, 10, 0))
    with pytest.raises(UsageError, match=r"prepare=pixels: the pixel copy of .* needs about .* GiB free"):
        pixel_copy(str(folder), index_imagefolder(str(folder)), 224, 3)
    assert not [p for p in cache_root(str(folder)).iterdir() if p.name.endswith("-c3")]


def test_prepare_takes_auto_off_or_pixels():
    for value in ("auto", "off", "pixels"):
        TrialParams(prepare=value).validate()
    with pytest.raises(UsageError, match="prepare.*pixels"):
        TrialParams(prepare="always").validate()
