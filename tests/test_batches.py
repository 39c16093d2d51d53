"""Per-rank batches: sharding like DistributedSampler, uint8 -> normalised model input, micro batch iteration."""

from __future__ import annotations

import pytest
import torch

from trainers.data.batches import CPU_DECODE_MIN_WORKERS, Batches, decodes_on_gpu, shard_indices, to_model_input
from trainers.data.datasets import ImageData

CPU = torch.device("cpu")


# ---- shard_indices ------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "world"), [(12, 4), (10, 3), (7, 1), (5, 8), (1797, 4)])
@pytest.mark.parametrize("shuffle", [True, False])
def test_shards_cover_every_sample_once_up_to_padding(n, world, shuffle):
    shards = [shard_indices(n, rank, world, epoch=0, seed=0, shuffle=shuffle) for rank in range(world)]
    per_rank = -(-n // world)
    assert all(len(s) == per_rank for s in shards)  # equal length: no rank waits for a missing step
    everything = torch.cat(shards)
    assert sorted(set(everything.tolist())) == list(range(n))
    counts = torch.bincount(everything, minlength=n)
    padding = per_rank * world - n
    assert int((counts - 1).sum()) == padding  # only the padding repeats samples


def test_shards_are_disjoint_when_the_world_divides_the_samples():
    shards = [set(shard_indices(12, r, 4, epoch=3, seed=1, shuffle=True).tolist()) for r in range(4)]
    assert set().union(*shards) == set(range(12))
    assert sum(len(s) for s in shards) == 12


def test_shuffled_order_differs_per_epoch_and_repeats_per_epoch_and_seed():
    a = shard_indices(100, 1, 2, epoch=0, seed=0, shuffle=True)
    assert torch.equal(a, shard_indices(100, 1, 2, epoch=0, seed=0, shuffle=True))
    assert not torch.equal(a, shard_indices(100, 1, 2, epoch=1, seed=0, shuffle=True))
    assert sorted(a.tolist()) != list(range(1, 100, 2))  # really shuffled, not the strided order


def test_unshuffled_order_is_strided_by_rank():
    assert shard_indices(10, 1, 3, epoch=5, seed=9, shuffle=False).tolist() == [1, 4, 7, 0]


# ---- to_model_input -------------------------------------------------------------------------


def test_model_input_is_normalised_float_of_the_asked_size():
    pixels = torch.zeros(2, 3, 8, 8, dtype=torch.uint8)
    pixels[1] = 255
    x = to_model_input(pixels, image_size=32, dtype=torch.float32, flip=False)
    assert x.shape == (2, 3, 32, 32) and x.dtype == torch.float32
    assert torch.allclose(x[0], torch.full_like(x[0], -1.0))
    assert torch.allclose(x[1], torch.full_like(x[1], 1.0))


def test_model_input_keeps_values_without_resizing_at_the_native_size():
    pixels = torch.randint(0, 256, (3, 3, 16, 16), dtype=torch.uint8)
    x = to_model_input(pixels, image_size=16, dtype=torch.float32, flip=False)
    assert torch.allclose(x, pixels.float() / 127.5 - 1.0, atol=1e-6)
    assert -1.0 <= float(x.min()) and float(x.max()) <= 1.0


def test_model_input_resizes_down_too_and_casts_to_the_asked_dtype():
    pixels = torch.randint(0, 256, (2, 3, 64, 48), dtype=torch.uint8)
    x = to_model_input(pixels, image_size=32, dtype=torch.bfloat16, flip=False)
    assert x.shape == (2, 3, 32, 32) and x.dtype == torch.bfloat16


def test_augment_only_flips_images_horizontally():
    pixels = torch.arange(8, dtype=torch.uint8).repeat(16, 3, 8, 1)  # a horizontal ramp: flipping changes it
    plain = to_model_input(pixels, 8, torch.float32, flip=False)
    torch.manual_seed(0)
    augmented = to_model_input(pixels, 8, torch.float32, flip=True)
    flipped = [bool(torch.equal(a, p.flip(-1))) for a, p in zip(augmented, plain)]
    kept = [bool(torch.equal(a, p)) for a, p in zip(augmented, plain)]
    assert all(f or k for f, k in zip(flipped, kept))
    assert any(flipped) and any(kept)


# ---- Batches ----------------------------------------------------------------------------------


def indexed_data(n: int, side: int = 8) -> ImageData:
    """Image i is filled with pixel value i and labelled i, so every batch can be traced back."""
    x = torch.arange(n, dtype=torch.uint8).view(n, 1, 1, 1).expand(n, 3, side, side).contiguous()
    y = torch.arange(n, dtype=torch.int64)
    return ImageData(num_classes=n, train_x=x, train_y=y, val_x=x[:7].clone(), val_y=y[:7].clone())


def test_train_yields_the_asked_number_of_micro_batches_of_the_right_size():
    batches = Batches(indexed_data(40), CPU, image_size=16, dtype=torch.float32, rank=1, world=2, seed=0)
    out = list(batches.train(epoch=0, micro_batch=4, num_batches=3))
    assert len(out) == 3
    for x, y in out:
        assert x.shape == (4, 3, 16, 16) and x.dtype == torch.float32
        assert y.shape == (4,) and y.dtype == torch.int64


def test_train_batches_come_from_this_ranks_shard_with_matching_labels():
    data = indexed_data(40)
    batches = Batches(data, CPU, image_size=8, dtype=torch.float32, rank=1, world=2, seed=0)
    shard = shard_indices(40, 1, 2, epoch=2, seed=0, shuffle=True).tolist()
    labels = []
    for x, y in batches.train(epoch=2, micro_batch=5, num_batches=4):
        pixel_values = ((x[:, 0, 0, 0] + 1.0) * 127.5).round().long()
        assert pixel_values.tolist() == y.tolist()  # each label belongs to its own image
        labels += y.tolist()
    assert labels == shard  # 4 x 5 = all 20 of the rank's samples, in shard order


def test_train_wraps_around_when_asked_for_more_samples_than_the_shard():
    batches = Batches(indexed_data(6), CPU, image_size=8, dtype=torch.float32, rank=0, world=2, seed=0)
    out = list(batches.train(epoch=0, micro_batch=4, num_batches=3))  # 12 samples from a shard of 3
    assert [len(y) for _, y in out] == [4, 4, 4]
    shard = set(shard_indices(6, 0, 2, epoch=0, seed=0, shuffle=True).tolist())
    assert {v for _, y in out for v in y.tolist()} == shard


def test_synthetic_batches_are_one_fixed_random_batch_at_the_model_size():
    batches = Batches(ImageData(num_classes=10), CPU, image_size=24, dtype=torch.float32, rank=0, world=1, seed=0)
    out = list(batches.train(epoch=0, micro_batch=3, num_batches=4))
    assert len(out) == 4
    x0, y0 = out[0]
    assert x0.shape == (3, 3, 24, 24) and y0.shape == (3,)
    assert int(y0.min()) >= 0 and int(y0.max()) < 10
    assert all(x is x0 for x, _ in out)


def test_validation_counts_every_held_out_sample_once_across_ranks():
    data = indexed_data(20)
    seen = []
    for rank in range(3):
        batches = Batches(data, CPU, image_size=8, dtype=torch.float32, rank=rank, world=3, seed=0)
        for x, y in batches.validation(micro_batch=2):
            assert x.shape[1:] == (3, 8, 8) and len(x) <= 2
            seen += y.tolist()
    assert sorted(seen) == list(range(7))


@pytest.mark.parametrize(
    "decode, device, workers, jpeg_only, on_gpu",
    [
        ("auto", "cuda", 2, True, True),  # few host cores per rank (eight ranks on one host): nvJPEG
        ("auto", "cuda", 14, True, False),  # enough loader workers to keep up: the GPU stays the model's
        ("auto", "cuda", 2, False, False),  # a folder with PNGs: nvJPEG cannot decode it
        ("auto", "cpu", 2, True, False),
        ("gpu", "cuda", 14, True, True),  # asked for, whatever the workers
        ("cpu", "cuda", 2, True, False),
    ],
)
def test_auto_decode_takes_the_gpu_only_where_a_rank_has_few_loader_workers(decode, device, workers, jpeg_only, on_gpu):
    assert 2 < CPU_DECODE_MIN_WORKERS <= 14
    assert decodes_on_gpu(decode, torch.device(device), workers, jpeg_only) is on_gpu
