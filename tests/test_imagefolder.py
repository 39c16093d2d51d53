"""Image folders streamed per rank: layout checks, decoding of odd files, crops, shards, the CIFAR pad-crop."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from tests.image_folders import class_value, make_image_folder
from trainers.data.batches import Batches, FolderLoading, make_batches, pad_crop
from trainers.data.crops import val_crop
from trainers.data.datasets import check_data_dir, load_dataset
from trainers.data.imagefolder import (
    EncodedImages,
    FolderSplit,
    check_imagefolder,
    collate_encoded,
    decode_file,
    decode_on_device,
    index_imagefolder,
)

CLASSES = ("ant", "bee", "cat")
TRAIN_PER_CLASS, VAL_PER_CLASS = 6, 2


@pytest.fixture
def folder(tmp_path) -> Path:
    """3 classes x (6 train + 2 val) JPEGs and PNGs of four sizes; one grayscale and one CMYK file."""
    return make_image_folder(tmp_path, CLASSES, TRAIN_PER_CLASS, VAL_PER_CLASS)


def batches_of(folder: Path, rank: int = 0, world: int = 1, **loading) -> Batches:
    loading.setdefault("workers", 0)
    return Batches(
        load_dataset("imagefolder", str(folder)),
        torch.device("cpu"),
        16,
        torch.float32,
        rank,
        world,
        seed=0,
        loading=FolderLoading(**loading),
    )


# ---- layout -------------------------------------------------------------------------------------


def test_index_counts_files_per_split_and_sorts_classes(folder):
    data = load_dataset("imagefolder", str(folder))
    assert data.num_classes == 3 and data.folder.classes == list(CLASSES)
    assert data.num_train == 3 * TRAIN_PER_CLASS + 2
    assert len(data.folder.val.files) == 3 * VAL_PER_CLASS
    assert data.folder.val.labels == [0, 0, 1, 1, 2, 2]
    assert data.train_x is None  # nothing decoded up front


def test_folder_without_val_is_one_line_naming_it(folder):
    shutil.rmtree(folder / "val")
    with pytest.raises(UsageError) as e:
        check_data_dir("imagefolder", str(folder), download=False)
    assert "no val/ folder" in str(e.value) and str(folder) in str(e.value) and "\n" not in str(e.value)


def test_empty_class_folder_is_one_line_naming_it(folder):
    for f in (folder / "val" / "bee").iterdir():
        f.unlink()
    with pytest.raises(UsageError) as e:
        check_imagefolder(str(folder))
    assert str(folder / "val" / "bee") in str(e.value) and "no images" in str(e.value)
    assert "\n" not in str(e.value)


def test_mismatched_class_sets_name_both_folders_and_the_odd_classes(folder):
    (folder / "val" / "cat").rename(folder / "val" / "dog")
    with pytest.raises(UsageError) as e:
        check_imagefolder(str(folder))
    message = str(e.value)
    assert str(folder / "train") in message and str(folder / "val") in message
    assert "['cat']" in message and "['dog']" in message and "\n" not in message


def test_corrupt_file_is_an_error_naming_it(folder):
    bad = folder / "train" / "ant" / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    with pytest.raises(UsageError, match="broken.jpg"):
        decode_file(str(bad), 3)


# ---- decoding ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["grey.jpg", "cmyk.jpg"])
def test_grey_and_cmyk_become_rgb_or_one_channel(folder, name):
    path = str(next((folder / "train").rglob(name)))
    assert decode_file(path, 3).shape == (3, 30, 30)
    assert decode_file(path, 1).shape == (1, 30, 30)
    assert decode_file(path, 3).dtype == torch.uint8


# ---- batches ---------------------------------------------------------------------------------------


def test_training_batches_have_the_model_shape_dtype_and_range(folder):
    x, y = next(batches_of(folder).train(epoch=0, micro_batch=5, num_batches=1))
    assert x.shape == (5, 3, 16, 16) and x.dtype == torch.float32
    assert float(x.min()) >= -1.0 and float(x.max()) <= 1.0
    assert y.dtype == torch.int64 and set(y.tolist()) <= {0, 1, 2}


def test_one_channel_models_get_one_channel_batches(folder):
    x, _ = next(batches_of(folder, in_chans=1).train(epoch=0, micro_batch=4, num_batches=1))
    assert x.shape == (4, 1, 16, 16)


def test_labels_match_the_pixels_of_their_class(folder):
    """Flat images whose red channel is 40 + 80 x class: the crop must carry its own label."""
    for x, y in batches_of(folder).train(epoch=0, micro_batch=4, num_batches=5):
        red = (x[:, 0].mean(dim=(1, 2)) + 1) * 127.5
        assert torch.allclose(red, class_value(y).float(), atol=6)


def test_validation_is_deterministic_and_crops_differ_between_epochs(folder):
    b = batches_of(folder)
    first = torch.cat([x for x, _ in b.validation(4)])
    assert torch.equal(first, torch.cat([x for x, _ in b.validation(4)]))
    epoch0 = [x for x, _ in b.train(0, 4, 2)]
    assert all(torch.equal(a, c) for a, c in zip(epoch0, [x for x, _ in b.train(0, 4, 2)]))
    assert not all(torch.equal(a, c) for a, c in zip(epoch0, [x for x, _ in b.train(1, 4, 2)]))


def test_rank_shards_are_disjoint_and_cover_the_validation_split(folder):
    labels = [torch.cat([y for _, y in batches_of(folder, rank=r, world=2).validation(2)]) for r in range(2)]
    assert len(labels[0]) + len(labels[1]) == 3 * VAL_PER_CLASS
    assert sorted(torch.cat(labels).tolist()) == [0, 0, 1, 1, 2, 2]


def test_loader_worker_processes_give_the_same_crops_as_the_main_process(folder):
    inline = [x for x, _ in batches_of(folder, workers=0).train(0, 4, 2)]
    pooled = [x for x, _ in batches_of(folder, workers=1).train(0, 4, 2)]
    assert all(torch.equal(a, c) for a, c in zip(inline, pooled))


def test_encoded_micro_batch_crosses_a_worker_process_whole_and_decodes_to_each_files_pixels(folder):
    # the GPU path's batch is one byte tensor and its lengths (one descriptor per batch, not per file);
    # decode_jpeg takes the same list on the CPU, so the round trip is checked here without a GPU
    from torch.utils.data import DataLoader

    train = index_imagefolder(str(folder)).train
    jpegs = [i for i, f in enumerate(train.files) if f.endswith(".jpg") and Path(f).stem.isdigit()]
    split = FolderSplit([train.files[i] for i in jpegs], [train.labels[i] for i in jpegs])
    loader = DataLoader(EncodedImages(split), batch_size=len(jpegs), num_workers=1, collate_fn=collate_encoded)
    encoded, labels = next(iter(loader))
    flat, lengths = encoded
    assert flat.dim() == 1 and lengths.sum() == flat.numel() and len(lengths) == len(jpegs)
    decoded = decode_on_device(encoded, torch.device("cpu"), 16, 3, None, torch.Generator())
    expected = torch.stack([val_crop(decode_file(f, 3), 16) for f in split.files])
    assert torch.equal(decoded, expected) and labels.tolist() == split.labels


def test_sequence_parallel_ranks_of_one_group_share_a_data_parallel_rank(folder):
    params = TrialParams(dataset="imagefolder", data_dir=str(folder), num_workers=4, sequence_parallel=2)
    data = load_dataset("imagefolder", str(folder))
    made = [make_batches(params, data, torch.device("cpu"), 16, torch.float32, rank) for rank in range(4)]
    assert [(b.rank, b.world) for b in made] == [(0, 2), (0, 2), (1, 2), (1, 2)]


# ---- CIFAR's pad-crop -------------------------------------------------------------------------------


def test_pad_crop_is_a_shifted_window_of_the_zero_padded_image():
    torch.manual_seed(0)
    x = torch.arange(2 * 6 * 6, dtype=torch.float32).view(2, 1, 6, 6) + 1
    out = pad_crop(x, 2)
    assert out.shape == x.shape
    padded = torch.nn.functional.pad(x, (2, 2, 2, 2))
    for b in range(2):
        windows = [padded[b, :, i : i + 6, j : j + 6] for i in range(5) for j in range(5)]
        assert any(torch.equal(out[b], w) for w in windows)


def test_pad_crop_of_zero_is_the_identity():
    x = torch.rand(3, 3, 5, 5)
    assert torch.equal(pad_crop(x, 0), x)
