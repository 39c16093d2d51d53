"""The image folder's decoder (TorchCodec, PIL for the formats it does not read) gives the tensors torchvision's
deprecated decoders gave: JPEG (RGB, grey, CMYK), PNG, GIF and WebP pixel for pixel; grey from a GIF or WebP now has
the one channel asked for (torchvision returned three).  Images are made with Pillow."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from raysweep.bench.jpeg_decode import measure_jpeg_decode
from trainers.data.crops import back_to_back, crop_images
from trainers.data.imagefolder import EncodedImages, FolderSplit, collate_encoded, decode_file, decode_on_device


def torchvision_decode(path: str, in_chans: int) -> torch.Tensor:
    from torchvision.io import ImageReadMode, decode_image

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="torchvision")  # the comparison's
        return decode_image(path, mode=ImageReadMode.GRAY if in_chans == 1 else ImageReadMode.RGB)


@pytest.fixture(scope="module")
def pixels() -> np.ndarray:
    rng = np.random.default_rng(0)
    ramp = np.linspace(0, 255, 40, dtype=np.float32)
    return (ramp[None, :, None] * 0.7 + rng.normal(0, 20, (30, 40, 3))).clip(0, 255).astype(np.uint8)


@pytest.mark.parametrize(
    ("name", "mode"),
    [("rgb.jpg", "RGB"), ("grey.jpg", "L"), ("cmyk.jpg", "CMYK"), ("rgb.png", "RGB"), ("rgba.png", "RGBA")]
    + [("palette.gif", "P"), ("rgb.webp", "RGB")],
)
@pytest.mark.parametrize("in_chans", [3, 1])
def test_decoded_tensors_equal_torchvisions(tmp_path, pixels, name, mode, in_chans):
    path = tmp_path / name
    Image.fromarray(pixels).convert(mode).save(path)
    ours = decode_file(str(path), in_chans)
    assert ours.dtype == torch.uint8 and ours.shape == (in_chans, 30, 40)
    theirs = torchvision_decode(str(path), in_chans)
    if in_chans == 1 and path.suffix in (".gif", ".webp"):  # torchvision ignored the grey mode for these
        assert theirs.shape[0] == 3
        return
    assert torch.equal(ours, theirs)


def test_formats_torchcodec_does_not_read_are_decoded_by_pil(tmp_path, pixels):
    for name in ("rgb.tif", "rgb.bmp", "rgb.ppm"):
        Image.fromarray(pixels).save(tmp_path / name)
        assert torch.equal(decode_file(str(tmp_path / name), 3), torch.from_numpy(pixels).permute(2, 0, 1))


def test_the_encoded_path_decodes_a_batch_as_the_files_decode_one_by_one(tmp_path, pixels):
    files = []
    for i in range(3):
        Image.fromarray(np.roll(pixels, 7 * i, axis=1)).save(tmp_path / f"{i}.jpg", quality=90)
        files.append(str(tmp_path / f"{i}.jpg"))
    dataset = EncodedImages(FolderSplit(files, [0, 1, 2]))
    (flat, lengths), labels = collate_encoded([dataset[i] for i in range(3)])
    assert labels.tolist() == [0, 1, 2] and lengths.tolist() == [len(Path(f).read_bytes()) for f in files]
    batch = decode_on_device((flat, lengths), torch.device("cpu"), 24, 3, None, torch.Generator().manual_seed(0))
    one_by_one = [decode_file(f, 3) for f in files]
    assert torch.equal(batch, crop_images(back_to_back(one_by_one), 24, None, torch.Generator().manual_seed(0)))


def test_the_decode_benchmark_reports_both_decoders_and_no_pixel_difference():
    result = measure_jpeg_decode(images=20, size=32, repeats=2)
    assert set(result["decoders"]) == {"torchvision.io (deprecated)", "decode_file (TorchCodec)"}
    assert result["max_pixel_diff"] == 0
    assert all(r["min_files_s"] <= r["median_files_s"] <= r["max_files_s"] for r in result["decoders"].values())
