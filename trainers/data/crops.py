"""The crop recipes of timm and torchvision: RandomResizedCrop and flip to train, resize and centre crop to validate.

Two ways to apply them, one set of boxes.  ``train_crop``/``val_crop`` crop one image (the CPU path,
in loader workers: torchvision's antialiased resize, exactly).  ``crop_batch`` crops a whole micro batch
of differently sized images in one ``roi_align`` call (the GPU path, after nvJPEG or from a pixel copy):
each output pixel averages ``ceil(box / size)`` squared bilinear samples of its bin, so a downscale is
filtered as an antialiased resize is, and a box of the output's size is copied pixel for pixel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

# timm's and torchvision's evaluation recipe: resize the shorter side to size / 0.875, centre crop.
VAL_CROP_FRACTION = 0.875
# RandomResizedCrop's tries before it falls back to the whole image (torchvision's figure)
CROP_ATTEMPTS = 10


@dataclass(frozen=True)
class CropRecipe:
    """RandomResizedCrop's ranges and the flip: the trial's augmentation parameters."""

    scale_min: float = 0.08
    ratio_min: float = 3 / 4
    ratio_max: float = 4 / 3
    flip: bool = True


def random_crop_boxes(
    heights: torch.Tensor, widths: torch.Tensor, recipe: CropRecipe, generator: torch.Generator
) -> torch.Tensor:
    """torchvision's RandomResizedCrop.get_params for every image at once: int64 (B, 4) of (top, left, h, w).

    Each image takes its first of ``CROP_ATTEMPTS`` draws whose box fits; an image none fits gets
    the whole image clamped to the ratio range, centred (torchvision's fallback).
    """
    heights, widths = heights.to(torch.float64), widths.to(torch.float64)
    count = len(heights)
    draws = torch.rand(count, CROP_ATTEMPTS, 2, generator=generator, dtype=torch.float64)
    target = heights[:, None] * widths[:, None] * (recipe.scale_min + (1 - recipe.scale_min) * draws[..., 0])
    log_min, log_max = math.log(recipe.ratio_min), math.log(recipe.ratio_max)
    aspect = torch.exp(log_min + (log_max - log_min) * draws[..., 1])
    w, h = torch.round(torch.sqrt(target * aspect)), torch.round(torch.sqrt(target / aspect))
    fits = (w > 0) & (w <= widths[:, None]) & (h > 0) & (h <= heights[:, None])
    first = fits.to(torch.uint8).argmax(dim=1, keepdim=True)
    found = fits.any(dim=1)
    in_ratio = widths / heights
    fallback_w = torch.where(in_ratio > recipe.ratio_max, torch.round(heights * recipe.ratio_max), widths)
    fallback_h = torch.where(in_ratio < recipe.ratio_min, torch.round(widths / recipe.ratio_min), heights)
    h = torch.where(found, h.gather(1, first)[:, 0], fallback_h)
    w = torch.where(found, w.gather(1, first)[:, 0], fallback_w)
    offsets = torch.rand(count, 2, generator=generator, dtype=torch.float64)
    top = torch.where(found, torch.floor(offsets[:, 0] * (heights - h + 1)), torch.floor((heights - h) / 2))
    left = torch.where(found, torch.floor(offsets[:, 1] * (widths - w + 1)), torch.floor((widths - w) / 2))
    return torch.stack([top, left, h, w], dim=1).to(torch.int64)


def random_crop_box(
    height: int, width: int, recipe: CropRecipe, generator: torch.Generator
) -> tuple[int, int, int, int]:
    """One image's (top, left, h, w): ``random_crop_boxes`` of a batch of one."""
    box = random_crop_boxes(torch.tensor([height]), torch.tensor([width]), recipe, generator)[0]
    return tuple(int(v) for v in box)  # type: ignore[return-value]


def val_short_side(size: int) -> int:
    """The shorter side validation resizes to before its centre crop: 256 for 224."""
    return int(size / VAL_CROP_FRACTION)


def val_crop_boxes(heights: torch.Tensor, widths: torch.Tensor, size: int) -> torch.Tensor:
    """float64 (B, 4) of (top, left, h, w): the source region ``val_crop`` keeps, before its resize.

    Rounded as torchvision rounds (the resized long side down, the centre crop's offset to even), so
    an image already ``val_short_side`` on its short side is cropped pixel for pixel.
    """
    heights, widths = heights.to(torch.float64), widths.to(torch.float64)
    short = val_short_side(size)
    scale = short / torch.minimum(heights, widths)
    resized_h = torch.where(heights <= widths, short, torch.floor(short * heights / widths))
    resized_w = torch.where(widths <= heights, short, torch.floor(short * widths / heights))
    top, left = torch.round((resized_h - size) / 2) / scale, torch.round((resized_w - size) / 2) / scale
    side = size / scale
    return torch.stack([top, left, side, side], dim=1)


def train_crop(image: torch.Tensor, size: int, recipe: CropRecipe, generator: torch.Generator) -> torch.Tensor:
    """RandomResizedCrop to ``size`` x ``size`` and a random horizontal flip of one image."""
    from torchvision.transforms.v2.functional import resized_crop

    top, left, h, w = random_crop_box(image.shape[-2], image.shape[-1], recipe, generator)
    out = resized_crop(image, top, left, h, w, [size, size], antialias=True)
    if recipe.flip and torch.rand(1, generator=generator).item() < 0.5:
        out = out.flip(-1)
    return out


def resized_to(image: torch.Tensor, short_side: int) -> torch.Tensor:
    """``image`` with its shorter side ``short_side`` where longer (antialiased), else unchanged: never upscaled."""
    from torchvision.transforms.v2.functional import resize

    return resize(image, [short_side], antialias=True) if min(image.shape[-2:]) > short_side else image


def val_crop(image: torch.Tensor, size: int) -> torch.Tensor:
    """Resize the shorter side to size / 0.875, then the centre size x size: deterministic."""
    from torchvision.transforms.v2.functional import center_crop, resize

    return center_crop(resize(image, [val_short_side(size)], antialias=True), [size, size])


def flip_chosen(images: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """``images`` (B, C, H, W) with those where ``chosen`` (B,) is true mirrored left to right."""
    return torch.where(chosen[:, None, None, None], images.flip(-1), images)


def back_to_back(images: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """``images`` (C, H, W) of one device as their bytes back to back (one flat tensor) and int64 (B, 3) shapes."""
    return torch.cat([img.reshape(-1) for img in images]), torch.tensor([tuple(img.shape) for img in images])


def edge_padded_batch(flat: torch.Tensor, shapes: torch.Tensor) -> torch.Tensor:
    """float32 (B, C, H + 1, W + 1) of the images in ``flat`` (``back_to_back``'s form), each top-left, in one gather.

    Each image's last row and column are repeated out to the batch's edge.  A box touching an image's
    bottom or right edge has bilinear samples up to half a pixel past the last pixel centre; the first
    repeat gives them the edge's value, as a resize of that image alone would, and no sample reaches
    further.  ``shapes`` stays on the host: the batch's extent is read from it without a device sync.
    """
    device = flat.device
    # int32 indices halve the index tensor's memory (it has an entry per padded pixel) where they can
    dtype = torch.int32 if flat.numel() < 2**31 else torch.int64
    sizes = shapes.prod(dim=1)
    starts, (channels, heights, widths) = torch.cumsum(sizes, 0) - sizes, shapes.unbind(dim=1)
    start, h, w = (t.to(device, dtype)[:, None, None, None] for t in (starts, heights, widths))
    rows = torch.arange(int(heights.max()) + 1, device=device, dtype=dtype)[None, None, :, None]
    cols = torch.arange(int(widths.max()) + 1, device=device, dtype=dtype)[None, None, None, :]
    planes = torch.arange(int(channels[0]), device=device, dtype=dtype)[None, :, None, None] * h * w
    index = start + planes + torch.minimum(rows, h - 1) * w + torch.minimum(cols, w - 1)
    # uint8 is gathered as stored (a quarter of float32's bytes); other dtypes as float32, because CUDA
    # does not index every dtype (uint16)
    return (flat if flat.dtype == torch.uint8 else flat.to(torch.float32))[index].to(torch.float32)


def crop_batch(flat: torch.Tensor, shapes: torch.Tensor, boxes: torch.Tensor, size: int) -> torch.Tensor:
    """(B, C, size, size): box i (``boxes`` (B, 4) of top, left, h, w) of image i resized to ``size``.

    uint8 images come back uint8, rounded as a resize of uint8 rounds; arrays of other dtypes as float32.
    """
    from torchvision.ops import roi_align

    batch = edge_padded_batch(flat, shapes)
    top, left, h, w = boxes.to(torch.float32).unbind(dim=1)
    index = torch.arange(len(shapes), dtype=torch.float32)
    rois = torch.stack([index, left, top, left + w, top + h], dim=1).to(batch.device)
    out = roi_align(batch, rois, output_size=(size, size), spatial_scale=1.0, sampling_ratio=-1, aligned=True)
    return out.round_().clamp_(0, 255).to(torch.uint8) if flat.dtype == torch.uint8 else out


def crop_images(
    stored: tuple[torch.Tensor, torch.Tensor], size: int, recipe: CropRecipe | None, generator: torch.Generator
) -> torch.Tensor:
    """The recipe's crops of a micro batch of differently sized images (``back_to_back``'s form), on their device.

    (B, C, size, size), uint8 for uint8 images (``crop_batch``).  Boxes and flips are drawn on the host from
    ``generator`` (a few numbers per image); ``recipe`` None crops for validation, as ``val_crop`` does.
    """
    flat, shapes = stored
    heights, widths = shapes[:, 1], shapes[:, 2]
    if recipe is None:
        return crop_batch(flat, shapes, val_crop_boxes(heights, widths, size), size)
    out = crop_batch(flat, shapes, random_crop_boxes(heights, widths, recipe, generator), size)
    if not recipe.flip:
        return out
    return flip_chosen(out, (torch.rand(len(shapes), generator=generator) < 0.5).to(out.device))
