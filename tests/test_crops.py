"""Crop recipes: boxes drawn as torchvision draws them; the GPU path's batched crop against torchvision's."""

from __future__ import annotations

import pytest
import torch
from torchvision.transforms import RandomResizedCrop
from torchvision.transforms.v2.functional import resized_crop

from trainers.data.crops import (
    CropRecipe,
    back_to_back,
    crop_batch,
    edge_padded_batch,
    random_crop_box,
    random_crop_boxes,
    val_crop,
    val_crop_boxes,
)


def smooth_image(height: int, width: int) -> torch.Tensor:
    """uint8 (3, H, W) of ramps: resampling filters agree on it to within rounding."""
    yy, xx = torch.meshgrid(
        torch.arange(height, dtype=torch.float32), torch.arange(width, dtype=torch.float32), indexing="ij"
    )
    return (
        torch.stack([yy / height * 255, xx / width * 255, (yy + xx) / (height + width) * 255]).round().to(torch.uint8)
    )


def noise_image(height: int, width: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 256, (3, height, width), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


# ---- boxes -------------------------------------------------------------------------------------------


def test_full_scale_square_crop_of_a_square_image_is_the_whole_image():
    g = torch.Generator().manual_seed(0)
    assert random_crop_box(20, 20, CropRecipe(1.0, 1.0, 1.0), g) == (0, 0, 20, 20)


def test_crop_boxes_stay_inside_the_image_and_within_the_recipe():
    g = torch.Generator().manual_seed(0)
    recipe = CropRecipe(0.25, 0.5, 2.0)
    top, left, h, w = random_crop_boxes(torch.full((2000,), 30), torch.full((2000,), 60), recipe, g).unbind(1)
    assert (top >= 0).all() and (top + h <= 30).all() and (left >= 0).all() and (left + w <= 60).all()
    assert (0.25 * 1800 * 0.8 <= h * w).all()  # rounding of h and w loses at most a little area
    ratio = w / h
    assert (0.5 * 0.8 <= ratio).all() and (ratio <= 2.0 * 1.25).all()


def test_an_image_no_draw_fits_gets_torchvisions_fallback_the_whole_image_clamped_to_the_ratio_centred():
    # a square image and a 2:1 box of all its area: never fits, so the widest 2:1 box, centred
    g = torch.Generator().manual_seed(0)
    assert random_crop_box(40, 40, CropRecipe(1.0, 2.0, 2.0), g) == (10, 0, 20, 40)
    assert random_crop_box(40, 40, CropRecipe(1.0, 0.5, 0.5), g) == (0, 10, 40, 20)


def test_crop_boxes_follow_torchvisions_distribution_of_area_and_aspect():
    count, height, width = 4000, 375, 500
    torch.manual_seed(0)
    reference = torch.tensor(
        [RandomResizedCrop.get_params(torch.zeros(1, height, width), (0.08, 1.0), (3 / 4, 4 / 3)) for _ in range(count)]
    )
    ours = random_crop_boxes(
        torch.full((count,), height), torch.full((count,), width), CropRecipe(), torch.Generator().manual_seed(0)
    )
    area = [(b[:, 2] * b[:, 3]).double().mean() / (height * width) for b in (ours, reference)]
    log_ratio = [(b[:, 3] / b[:, 2]).double().log().mean() for b in (ours, reference)]
    assert abs(area[0] - area[1]) < 0.02
    assert abs(log_ratio[0] - log_ratio[1]) < 0.02


def test_val_boxes_of_an_image_already_at_the_short_side_crop_it_pixel_for_pixel():
    for height, width in ((256, 341), (400, 256)):
        image = noise_image(height, width)
        boxes = val_crop_boxes(torch.tensor([height]), torch.tensor([width]), 224)
        assert torch.equal(crop_batch(*back_to_back([image]), boxes, 224)[0], val_crop(image, 224))


# ---- the batched crop ------------------------------------------------------------------------------------


@pytest.mark.parametrize("box", [(30, 40, 300, 420), (0, 0, 375, 500), (100, 200, 60, 80), (315, 440, 60, 60)])
def test_batched_crop_matches_torchvisions_antialiased_resized_crop_on_smooth_images(box):
    """Downscales (the first two), an upscale, and a box in the bottom-right corner (the edge's repeat)."""
    image = smooth_image(375, 500)
    ours = crop_batch(*back_to_back([image]), torch.tensor([box]), 32 if box[2] > 100 else 96)[0].int()
    size = ours.shape[-1]
    reference = resized_crop(image, *box, [size, size], antialias=True).int()
    assert (ours - reference).abs().max() <= 2


def test_val_crop_of_a_larger_image_matches_torchvisions():
    image = smooth_image(375, 500)
    ours = crop_batch(*back_to_back([image]), val_crop_boxes(torch.tensor([375]), torch.tensor([500]), 224), 224)[
        0
    ].int()
    assert (ours - val_crop(image, 224).int()).abs().max() <= 1


def test_each_image_of_a_mixed_batch_is_cropped_as_if_alone():
    images = [noise_image(h, w, seed) for seed, (h, w) in enumerate(((20, 30), (32, 17), (25, 25)))]
    boxes = torch.tensor([[0, 0, 20, 30], [10, 5, 22, 12], [3, 4, 21, 21]])
    together = crop_batch(*back_to_back(images), boxes, 16)
    for i, image in enumerate(images):
        assert torch.equal(together[i], crop_batch(*back_to_back([image]), boxes[i : i + 1], 16)[0])


def test_padded_batch_holds_each_image_top_left_with_its_last_row_and_column_repeated_to_the_edge():
    images = [noise_image(h, w, seed) for seed, (h, w) in enumerate(((5, 7), (8, 4)))]
    batch = edge_padded_batch(*back_to_back(images))
    assert batch.shape == (2, 3, 9, 8) and batch.dtype == torch.float32
    for i, image in enumerate(images):
        h, w = image.shape[-2:]
        # what a resize of the image alone samples past its edge: its edge, however far the batch extends
        clamped = image[:, torch.arange(9).clamp(max=h - 1)][:, :, torch.arange(8).clamp(max=w - 1)]
        assert torch.equal(batch[i], clamped.float())
