"""Dataset loaders on tiny files the tests write in each format's own on-disk layout."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from raysweep.core.errors import UsageError
from trainers.data.datasets import DATASETS, check_data_dir, load_dataset, load_digits

# (image index, channel, row, column, value): one marked pixel in every file
MARK = (1, 2, 5, 7, 201)


def cifar_images(n: int, file_no: int) -> np.ndarray:
    """n images in CIFAR's row layout (N x 3072: 1024 R, 1024 G, 1024 B, each row-major 32x32)."""
    data = np.full((n, 3072), file_no, dtype=np.uint8)
    image, channel, row, col, value = MARK
    data[image, channel * 1024 + row * 32 + col] = value
    return data


def write_pickle(path: Path, batch: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(batch, f, protocol=2)


@pytest.fixture
def cifar10_dir(tmp_path) -> Path:
    folder = tmp_path / "cifar-10-batches-py"
    for i, name in enumerate([f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]):
        n = 3 if name == "test_batch" else 4
        write_pickle(
            folder / name,
            {b"batch_label": name.encode(), b"data": cifar_images(n, i), b"labels": [(i + j) % 10 for j in range(n)]},
        )
    return tmp_path


@pytest.fixture
def cifar100_dir(tmp_path) -> Path:
    folder = tmp_path / "cifar-100-python"
    for i, (name, n) in enumerate([("train", 6), ("test", 2)]):
        write_pickle(
            folder / name,
            {
                b"data": cifar_images(n, i),
                b"fine_labels": [99 - j for j in range(n)],
                b"coarse_labels": [j % 20 for j in range(n)],
            },
        )
    return tmp_path


def test_cifar10_loads_every_batch_file_with_shapes_dtypes_and_labels(cifar10_dir):
    data = load_dataset("cifar10", str(cifar10_dir))
    assert data.num_classes == 10
    assert data.train_x.shape == (20, 3, 32, 32) and data.train_x.dtype == torch.uint8
    assert data.train_y.shape == (20,) and data.train_y.dtype == torch.int64
    assert data.val_x.shape == (3, 3, 32, 32) and data.val_y.dtype == torch.int64
    assert data.num_train == 20
    expected = [(i + j) % 10 for i in range(5) for j in range(4)]
    assert data.train_y.tolist() == expected
    assert data.val_y.tolist() == [5, 6, 7]
    # files are concatenated in order data_batch_1..5: every image carries its file's fill value
    assert [int(data.train_x[k, 0, 0, 0]) for k in range(0, 20, 4)] == [0, 1, 2, 3, 4]


def test_cifar10_pixel_layout_round_trips(cifar10_dir):
    data = load_dataset("cifar10", str(cifar10_dir))
    image, channel, row, col, value = MARK
    assert int(data.train_x[image, channel, row, col]) == value
    assert int(data.val_x[image, channel, row, col]) == value
    # exactly one pixel of that image differs from the fill value, and it is the marked one
    differs = (data.train_x[image] != 0).nonzero().tolist()
    assert differs == [[channel, row, col]]


def test_cifar100_uses_fine_labels_and_its_own_layout(cifar100_dir):
    data = DATASETS["cifar100"](str(cifar100_dir))
    assert data.num_classes == 100
    assert data.train_x.shape == (6, 3, 32, 32) and data.train_x.dtype == torch.uint8
    assert data.train_y.tolist() == [99, 98, 97, 96, 95, 94]
    assert data.val_y.tolist() == [99, 98]
    image, channel, row, col, value = MARK
    assert int(data.train_x[image, channel, row, col]) == value
    assert int(data.val_x[image, channel, row, col]) == value
    assert int(data.val_x[0, 2, 31, 31]) == 1  # test file's fill value


def test_missing_cifar_file_is_a_usage_error_naming_it(cifar10_dir):
    (cifar10_dir / "cifar-10-batches-py" / "data_batch_3").unlink()
    with pytest.raises(UsageError) as e:
        load_dataset("cifar10", str(cifar10_dir))
    assert "data_batch_3" in str(e.value)
    assert "data_batch_1" not in str(e.value)
    assert "--download" in str(e.value)


def test_missing_cifar_directory_names_every_missing_file(tmp_path):
    with pytest.raises(UsageError) as e:
        load_dataset("cifar100", str(tmp_path / "nowhere"))
    assert "cifar-100-python" in str(e.value)
    assert "train" in str(e.value) and "test" in str(e.value)


def test_digits_is_the_real_1797_images_split_80_20():
    data = load_digits(seed=0)
    assert data.num_classes == 10
    assert data.num_train + len(data.val_y) == 1797
    assert len(data.val_y) == 1797 // 5
    assert data.train_x.shape == (1797 - 359, 3, 8, 8) and data.train_x.dtype == torch.uint8
    assert data.val_x.shape == (359, 3, 8, 8)
    assert int(data.train_x.max()) == 255 and int(data.train_x.min()) == 0
    assert torch.equal(data.train_x[:, 0], data.train_x[:, 2])  # grey: three equal channels
    assert set(data.train_y.tolist()) == set(range(10)) == set(data.val_y.tolist())


def test_digits_split_is_deterministic_per_seed():
    a, b, c = load_digits(seed=0), load_digits(seed=0), load_digits(seed=1)
    assert torch.equal(a.train_y, b.train_y) and torch.equal(a.val_x, b.val_x)
    assert not torch.equal(a.val_y, c.val_y)
    # a different split of the same images: the label histogram over both parts is unchanged
    assert torch.equal(torch.bincount(torch.cat([a.train_y, a.val_y])), torch.bincount(torch.cat([c.train_y, c.val_y])))


def test_synthetic_has_classes_but_no_tensors():
    data = load_dataset("synthetic")
    assert data.num_classes == 10 and data.train_x is None and data.num_train == 0


def test_check_data_dir_names_the_missing_cifar_file_unless_downloading(cifar10_dir):
    (cifar10_dir / "cifar-10-batches-py" / "test_batch").unlink()
    with pytest.raises(UsageError, match="test_batch"):
        check_data_dir("cifar10", str(cifar10_dir), download=False)
    check_data_dir("cifar10", str(cifar10_dir), download=True)


def test_cifar_gets_the_pad_4_crop(cifar10_dir):
    assert load_dataset("cifar10", str(cifar10_dir)).pad_crop == 4
    assert load_digits().pad_crop == 0
