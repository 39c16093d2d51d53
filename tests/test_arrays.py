"""The arrays dataset: what it reads (layouts, dtypes, mixed sizes), what it refuses (one line naming the file),
its per-channel statistics (measured once, reused), and the batches it makes on either path."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from tests.image_folders import make_array_folder
from trainers.data.arrays import ArraySplit, array_stats, index_arrays, read_array, read_header
from trainers.data.batches import make_batches, to_model_input
from trainers.data.channel_stats import IMAGE_STATS, ChannelStats
from trainers.data.crops import crop_batch, crop_images
from trainers.data.datasets import check_data_dir, load_dataset
from trainers.data.node_cache import cache_root
from trainers.data.pixel_copy import read_batches
from trainers.make_arrays import main as make_arrays_main


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float16", "float32"])
@pytest.mark.parametrize("layout, fmt", [("chw", "npy"), ("hwc", "npy"), ("chw", "npz")])
def test_every_layout_and_dtype_reads_back_as_channels_first(tmp_path, dtype, layout, fmt):
    folder = make_array_folder(tmp_path, channels=5, dtype=dtype, layout=layout, format=fmt)
    index = index_arrays(str(folder))
    assert isinstance(index.train, ArraySplit) and index.classes == ["class0", "class1"]
    assert (index.train.channels, index.train.dtype, len(index.train), len(index.val)) == (5, dtype, 8, 4)
    shapes = {index.train.shape(i) for i in range(len(index.train))}
    assert len(shapes) > 1 and all(c == 5 and 24 <= h <= 40 and 24 <= w <= 40 for c, h, w in shapes)
    values = read_array(index.train.files[0])
    assert values.dtype == np.dtype(dtype) and values.shape == index.train.shape(0) and values.flags.c_contiguous


def test_a_two_dimensional_array_is_one_channel_and_a_small_last_axis_is_channels_last(tmp_path):
    np.save(tmp_path / "plane.npy", np.zeros((30, 20), np.float32))
    np.save(tmp_path / "hwc.npy", np.zeros((30, 20, 4), np.uint16))
    assert read_header(str(tmp_path / "plane.npy")).channels == 1
    assert (read_header(str(tmp_path / "hwc.npy")).channels, read_array(str(tmp_path / "hwc.npy")).shape) == (
        4,
        (4, 30, 20),
    )


@pytest.mark.parametrize(
    "values, message",
    [
        (np.zeros((3, 8, 8), np.int64), "dtype int64 is not one of uint8, uint16, float16, float32"),
        (np.zeros((200, 8, 200), np.uint8), "200 channels on its smaller end axis (1 to 128)"),
        (np.zeros((2, 3, 8, 8), np.uint8), "is not (C, H, W), (H, W, C) or (H, W)"),
        (None, "cannot read it"),
    ],
    ids=["dtype", "channels", "ndim", "corrupt"],
)
def test_a_bad_file_is_refused_in_one_line_naming_it(tmp_path, values, message):
    folder = make_array_folder(tmp_path / "data")
    bad = folder / "train" / "class1" / "bad.npy"
    if values is None:
        bad.write_bytes(b"not an array")
    else:
        np.save(bad, values)
    with pytest.raises(UsageError) as e:
        check_data_dir("arrays", str(folder), download=False, in_chans=8)
    assert str(bad) in str(e.value) and message in str(e.value) and "\n" not in str(e.value)


def test_a_file_of_another_channel_count_is_named(tmp_path):
    folder = make_array_folder(tmp_path)
    np.save(folder / "val" / "class0" / "odd.npy", np.zeros((3, 30, 30), np.uint16))
    with pytest.raises(UsageError, match="odd.npy: 3 channels of uint16 where .* has 8 of uint16"):
        index_arrays(str(folder))


def test_in_chans_unlike_the_arrays_channels_is_refused_with_both_numbers(tmp_path):
    folder = make_array_folder(tmp_path)
    with pytest.raises(UsageError, match="in_chans=3 but the arrays in .* hold 8 channels; set in_chans=8"):
        check_data_dir("arrays", str(folder), download=False, in_chans=3)
    check_data_dir("arrays", str(folder), download=False, in_chans=8)


def test_channel_stats_are_numpys_over_the_training_split_measured_once(tmp_path):
    folder = make_array_folder(tmp_path)
    index = index_arrays(str(folder))
    stats = array_stats(str(folder), index)
    every = np.concatenate([read_array(f).reshape(8, -1) for f in index.train.files], axis=1).astype(np.float64)
    np.testing.assert_allclose(stats.mean, every.mean(axis=1), rtol=1e-9)
    np.testing.assert_allclose(stats.std, every.std(axis=1), rtol=1e-6)
    stored = next(cache_root(str(folder)).glob("*-arrays-stats/channel_stats.json"))
    built_at = stored.stat().st_mtime_ns
    assert array_stats(str(folder), index_arrays(str(folder))) == stats and stored.stat().st_mtime_ns == built_at


def test_a_constant_channel_is_shifted_and_left_unscaled():
    stats = ChannelStats.from_sums(4, [8.0, 4.0], [16.0, 8.0])  # values 2,2,2,2 and 0,0,2,2
    assert stats.mean == (2.0, 1.0) and stats.std == (1.0, 1.0)


def test_image_stats_keep_uint8_normalisation_to_minus_one_one():
    pixels = torch.tensor([0, 255], dtype=torch.uint8).view(1, 2, 1, 1).expand(1, 2, 4, 4)
    x = to_model_input(pixels, 4, torch.float32, flip=False, stats=IMAGE_STATS)
    assert torch.equal(x[0, 0], torch.full((4, 4), -1.0)) and torch.equal(x[0, 1], torch.full((4, 4), 1.0))


def trial_batches(folder, **params):
    trial = TrialParams(dataset="arrays", data_dir=str(folder), in_chans=8, loader_workers=1, **params)
    return make_batches(trial, load_dataset("arrays", str(folder)), torch.device("cpu"), 32, torch.float32, rank=0)


def test_a_rank_trains_on_normalised_crops_of_every_channel(tmp_path):
    folder = make_array_folder(tmp_path)
    batches = trial_batches(folder)
    assert len(batches.stats.mean) == 8
    x, y = next(batches.train(epoch=0, micro_batch=4, num_batches=1))
    assert x.shape == (4, 8, 32, 32) and x.dtype == torch.float32 and y.shape == (4,)
    # normalised by the split's own statistics: near zero mean, unit spread over a batch
    assert abs(float(x.mean())) < 0.5 and 0.3 < float(x.std()) < 3
    val = list(batches.validation(micro_batch=4))
    assert sum(len(v[1]) for v in val) == 4 and all(v[0].shape[1:] == (8, 32, 32) for v in val)


def test_the_device_path_crops_stored_uint16_values_without_rounding_them_to_bytes(tmp_path):
    """What a GPU rank runs (read_batches, crop_images), here on the CPU: a whole-image box keeps every value."""
    folder = make_array_folder(tmp_path, size=32, min_size=32)
    split = index_arrays(str(folder)).train
    (flat, shapes), labels = next(read_batches(split, [0, 1], micro_batch=2, threads=1, pin=False))
    assert flat.dtype == torch.uint16 and shapes.tolist() == [[8, 32, 32], [8, 32, 32]]
    out = crop_images((flat, shapes), 28, recipe=None, generator=torch.Generator())
    assert out.dtype == torch.float32 and out.shape == (2, 8, 28, 28) and float(out.max()) > 255
    box = torch.tensor([[0, 0, 32, 32], [0, 0, 32, 32]])
    whole = crop_batch(flat, shapes, box, 32)  # a box of the output's size is copied value for value
    assert torch.equal(whole, flat.to(torch.float32).view(2, 8, 32, 32))


def test_the_generator_cli_writes_the_folder(tmp_path, capsys):
    assert (
        make_arrays_main(
            [str(tmp_path), "--channels", "3", "--dtype", "float32", "--size", "16"] + ["--per-class", "1"]
        )
        == 0
    )
    index = index_arrays(str(tmp_path))
    assert (index.train.channels, index.train.dtype, len(index.train)) == (3, "float32", 4)
    assert "wrote 12 arrays" in capsys.readouterr().out


@pytest.mark.parametrize(
    "preset, channels, shape", [("fastmri", 30, (640, 368)), ("climate", 91, (128, 256))], ids=["fastmri", "climate"]
)
def test_a_preset_writes_arrays_of_the_real_sets_shape_and_a_given_flag_overrides_it(tmp_path, preset, channels, shape):
    argv = [str(tmp_path), "--preset", preset, "--classes", "2", "--per-class", "1", "--val-per-class", "1"]
    assert make_arrays_main(argv) == 0
    index = index_arrays(str(tmp_path))
    assert (index.train.channels, index.train.dtype, len(index.train)) == (channels, "float32", 2)
    header = read_header(str(next((tmp_path / "train" / "class0").iterdir())))
    assert (header.channels, header.height, header.width) == (channels, *shape)
    # the spatial sides stay above the channel count, which the reader tells the channel axis by
    assert make_arrays_main([str(tmp_path / "small"), *argv[1:], "--height", "120", "--width", "100"]) == 0
    header = read_header(str(next((tmp_path / "small" / "val" / "class0").iterdir())))
    assert (header.channels, header.height, header.width) == (channels, 120, 100)


def test_the_generator_cli_refuses_a_height_without_a_width(tmp_path, capsys):
    assert make_arrays_main([str(tmp_path), "--height", "32"]) == 2
    assert "--height and --width go together" in capsys.readouterr().err


def test_the_planner_refuses_mismatched_channels_before_any_trial(tmp_path):
    from raysweep.planning.checks import check_trial

    folder = make_array_folder(tmp_path)
    with pytest.raises(UsageError, match="in_chans=3 but the arrays .* hold 8 channels"):
        check_trial(TrialParams(dataset="arrays", data_dir=str(folder), in_chans=3))
    check_trial(TrialParams(dataset="arrays", data_dir=str(folder), in_chans=8))


@pytest.mark.parametrize(
    "values, message",
    [
        (dict(in_chans=0), "in_chans must be a positive integer, got 0"),
        (dict(in_chans=8, dataset="digits"), "in_chans=8 needs dataset in arrays, synthetic; dataset=digits"),
        (dict(activation_checkpointing=-1), "activation_checkpointing must be 0 (off) or k >= 1"),
    ],
)
def test_channel_and_checkpointing_values_are_refused_naming_the_field(values, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TrialParams(**values).validate()


def test_any_channel_count_builds_the_patch_embedding_for_it():
    from trainers.model.models import create_model

    TrialParams(dataset="synthetic", in_chans=13, activation_checkpointing=2).validate()
    model = create_model("vit_micro_patch4_32", num_classes=4, in_chans=13)
    assert model.patch_embed.proj.in_channels == 13 and model(torch.zeros(1, 13, 32, 32)).shape == (1, 4)


@pytest.mark.parametrize("layout", ["chw", "hwc"])
def test_tiff_arrays_read_as_npy_ones_do(tmp_path, layout):
    pytest.importorskip("tifffile")
    folder = make_array_folder(tmp_path, channels=12, dtype="uint16", format="tif", layout=layout)
    index = index_arrays(str(folder))
    assert (index.train.channels, index.train.dtype) == (12, "uint16")
    assert all(f.endswith(".tif") for f in index.train.files)
    assert read_array(index.train.files[0]).shape == index.train.shape(0)
