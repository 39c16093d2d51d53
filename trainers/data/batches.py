"""Per-rank batches on the device: shard, move uint8 pixels, then normalise, augment and resize there.

In-memory datasets are gathered per step (on the device when they fit); an image folder is streamed
through a DataLoader whose worker processes read (and on the CPU path decode) this rank's shard
(``trainers.data.imagefolder``), and a thread prepares each batch on the device ahead of its step
(``trainers.data.prefetch``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from raysweep.core.params import TrialParams
from trainers.data.arrays import ArraySplit, array_stats
from trainers.data.channel_stats import IMAGE_STATS, ChannelStats
from trainers.data.crops import CropRecipe, crop_images, flip_chosen
from trainers.data.datasets import ImageData
from trainers.data.imagefolder import (
    DecodedImages,
    EncodedImages,
    Split,
    UnreadableFiles,
    all_jpeg,
    collate_decoded,
    collate_encoded,
    decode_on_device,
)
from trainers.data.node_cache import cache_root
from trainers.data.pixel_copy import PixelSplit, pixel_copy, read_batches
from trainers.data.prefetch import prefetched
from trainers.data.prepared import pays_to_prepare, prepared_index

# seconds a loader worker may take for one micro batch before the trial fails
LOADER_TIMEOUT_S = 300
# threads reading a pixel copy for a GPU rank, in place of its loader workers: two already read many
# times faster than a GPU trains a ViT on them, and each thread more would contend with the training
# loop for the GIL (docs/performance.md, input pipeline).
PIXEL_READERS = 2
# micro batches each loader worker keeps decoded ahead of the step
PREFETCH_PER_WORKER = 4
# decode=auto on a CUDA rank: CPU decode where the rank has this many loader workers, nvJPEG where it has
# fewer. Enough workers decoding on the CPU keep up with a GPU step without sharing the GPU with it; a
# few cannot, so a rank among many on one host (one or two cores each) decodes on its GPU
# (docs/performance.md, input pipeline).
CPU_DECODE_MIN_WORKERS = 8


def pad_crop(x: torch.Tensor, pad: int) -> torch.Tensor:
    """Batched random crop of the original size after zero-padding ``pad`` pixels per side, one offset per image."""
    b, _, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad))
    dy = torch.randint(0, 2 * pad + 1, (b, 1), device=x.device)
    dx = torch.randint(0, 2 * pad + 1, (b, 1), device=x.device)
    rows = (dy + torch.arange(h, device=x.device))[:, :, None]  # (B, H, 1)
    cols = (dx + torch.arange(w, device=x.device))[:, None, :]  # (B, 1, W)
    picked = padded[torch.arange(b, device=x.device)[:, None, None], :, rows, cols]  # (B, H, W, C)
    return picked.permute(0, 3, 1, 2)


def to_model_input(
    pixels: torch.Tensor,
    image_size: int,
    dtype: torch.dtype,
    flip: bool,
    crop_pad: int = 0,
    stats: ChannelStats = IMAGE_STATS,
) -> torch.Tensor:
    """(B, C, h, w) stored values on the device (uint8 images, or arrays) -> normalised by ``stats``, float
    (B, C, S, S); random pad-crop and flip if asked."""
    x = pixels.to(torch.float32)
    if crop_pad:  # before normalising: the padding is black, as in torchvision's RandomCrop(padding=4)
        x = pad_crop(x, crop_pad)
    x = stats.normalise(x)
    if x.shape[-1] != image_size or x.shape[-2] != image_size:
        x = F.interpolate(x, size=(image_size, image_size), mode="bilinear", align_corners=False)
    if flip:
        x = flip_chosen(x, torch.rand(x.shape[0], device=x.device) < 0.5)
    return x.to(dtype)


@dataclass(frozen=True)
class FolderLoading:
    """How an image folder reaches the device: the crop recipe, channels, decoder and loader processes.

    ``workers`` loader processes read and decode, except for a pixel copy on a GPU rank (``PIXEL_READERS``).
    ``skip_bad_files``: files that cannot be decoded are counted and read around instead of stopping the trial.
    """

    recipe: CropRecipe = CropRecipe()
    in_chans: int = 3
    decode: str = "auto"  # auto | cpu | gpu
    workers: int = 1
    skip_bad_files: bool = False


def shard_indices(num_samples: int, rank: int, world: int, epoch: int, seed: int, shuffle: bool) -> torch.Tensor:
    """This rank's sample indices for one epoch: DistributedSampler's order (padded to equal length)."""
    if shuffle:
        order = torch.randperm(num_samples, generator=torch.Generator().manual_seed(seed + epoch))
    else:
        order = torch.arange(num_samples)
    per_rank = -(-num_samples // world)
    padded = torch.cat([order, order[: per_rank * world - num_samples]]) if per_rank * world > num_samples else order
    return padded[rank::world]


# splits read as stored values, never decoded
STORED_SPLITS = (PixelSplit, ArraySplit)

# Datasets up to this size (uint8 pixels) live on the device for the whole trial: a step then
# gathers its batch there, and nothing crosses the bus (CIFAR-10 is 150 MiB).
DEVICE_RESIDENT_BYTES = 4 * 2**30


class Batches:
    """Micro batches for one rank.  ``train_samples`` may exceed the split (it wraps around)."""

    def __init__(
        self,
        data: ImageData,
        device: torch.device,
        image_size: int,
        dtype: torch.dtype,
        rank: int,
        world: int,
        seed: int,
        loading: FolderLoading = FolderLoading(),
    ):
        self.data, self.device, self.image_size, self.dtype = data, device, image_size, dtype
        self.rank, self.world, self.seed, self.loading = rank, world, seed, loading
        self.flip, self.stats = loading.recipe.flip, data.stats
        tensors = [data.train_x, data.train_y, data.val_x, data.val_y]
        size = sum(t.numel() * t.element_size() for t in tensors if t is not None)
        home = device if size <= DEVICE_RESIDENT_BYTES else torch.device("cpu")
        self.train_x, self.train_y, self.val_x, self.val_y = (None if t is None else t.to(home) for t in tensors)
        self.synthetic_x: torch.Tensor | None = None
        self.unreadable = UnreadableFiles(loading.skip_bad_files)

    def batch(self, x: torch.Tensor, y: torch.Tensor, take: torch.Tensor, augment: bool):
        take = take.to(x.device)
        pixels = x[take].to(self.device, non_blocking=True)
        labels = y[take].to(self.device, non_blocking=True)
        crop_pad = self.data.pad_crop if augment else 0
        x = to_model_input(pixels, self.image_size, self.dtype, self.flip and augment, crop_pad, self.stats)
        return x, labels

    def on_device(self, split: Split) -> bool:
        """Whether ``split``'s batches are decoded (files) or cropped (a pixel copy, arrays) on this rank's GPU."""
        if isinstance(split, STORED_SPLITS):
            return self.device.type == "cuda"
        return decodes_on_gpu(self.loading.decode, self.device, self.loading.workers, all_jpeg(split))

    def stream(
        self, split: Split, order: list[int], micro_batch: int, train: bool, epoch: int
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Micro batches of ``split`` in ``order``, read (and decoded) while the step runs.

        By loader worker processes, except a pixel copy or arrays on a GPU rank: there ``PIXEL_READERS``
        threads of this process read them (``read_batches``).
        """
        recipe = self.loading.recipe if train else None
        stored, gpu = isinstance(split, STORED_SPLITS), self.on_device(split)
        workers = self.loading.workers
        if stored and gpu:
            items = read_batches(split, order, micro_batch, PIXEL_READERS, pin=True)
        else:
            if gpu:
                dataset, collate = EncodedImages(split), collate_encoded
            else:
                dataset = DecodedImages(split, self.image_size, self.loading.in_chans, recipe, self.seed)
                dataset.epoch, collate = epoch, collate_decoded
            items = DataLoader(
                dataset,
                batch_size=micro_batch,
                sampler=order,
                num_workers=workers,
                collate_fn=collate,
                pin_memory=self.device.type == "cuda",
                prefetch_factor=PREFETCH_PER_WORKER if workers else None,
                # a worker whose batch cannot be sent (its queue feeder thread failed) leaves the loader
                # waiting forever: a bound turns that hang into a failed trial
                timeout=LOADER_TIMEOUT_S if workers else 0,
            )
        # crop boxes are drawn on the host (a few scalars per image), whatever device decodes
        generator = torch.Generator().manual_seed(self.seed + 1000 * epoch + self.rank)

        def prepare(batch: tuple) -> tuple[torch.Tensor, torch.Tensor]:
            pixels, labels, *unreadable = batch  # decoded batches carry the files read around
            self.unreadable.met(unreadable[0] if unreadable else [])
            if stored and gpu:
                flat, shapes = pixels
                on_device = (flat.to(self.device, non_blocking=True), shapes)
                pixels = crop_images(on_device, self.image_size, recipe, generator)
            elif gpu:
                pixels = decode_on_device(
                    pixels, self.device, self.image_size, self.loading.in_chans, recipe, generator
                )
            pixels = pixels.to(self.device, non_blocking=True)
            x = to_model_input(pixels, self.image_size, self.dtype, flip=False, stats=self.stats)
            return x, labels.to(self.device, non_blocking=True)

        yield from prefetched(items, prepare, self.device)

    def train(self, epoch: int, micro_batch: int, num_batches: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        folder = self.data.folder
        if folder is not None:
            idx = shard_indices(len(folder.train), self.rank, self.world, epoch, self.seed, shuffle=True)
            needed = micro_batch * num_batches
            idx = idx.repeat(-(-needed // len(idx)))[:needed]
            yield from self.stream(folder.train, idx.tolist(), micro_batch, train=True, epoch=epoch)
            return
        if self.train_x is None:
            yield from self.synthetic(micro_batch, num_batches)
            return
        idx = shard_indices(len(self.train_y), self.rank, self.world, epoch, self.seed, shuffle=True)
        needed = micro_batch * num_batches
        if len(idx) < needed:
            idx = idx.repeat(-(-needed // len(idx)))
        idx = idx.to(self.train_x.device)
        for b in range(num_batches):
            yield self.batch(self.train_x, self.train_y, idx[b * micro_batch : (b + 1) * micro_batch], augment=True)

    def synthetic(self, micro_batch: int, num_batches: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        # One fixed random batch, as timm's benchmark does: the data path costs nothing.
        if self.synthetic_x is None or self.synthetic_x.shape[0] != micro_batch:
            g = torch.Generator(device=self.device).manual_seed(self.seed + self.rank)
            shape = (micro_batch, self.loading.in_chans, self.image_size, self.image_size)
            self.synthetic_x = torch.randn(shape, generator=g, device=self.device).to(self.dtype)
            self.synthetic_y = torch.randint(0, self.data.num_classes, (micro_batch,), generator=g, device=self.device)
        for _ in range(num_batches):
            yield self.synthetic_x, self.synthetic_y

    def validation(self, micro_batch: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """This rank's share of the held-out split (nothing for synthetic data)."""
        folder = self.data.folder
        if folder is not None:
            order = list(range(len(folder.val)))[self.rank :: self.world]
            yield from self.stream(folder.val, order, micro_batch, train=False, epoch=0)
            return
        if self.val_x is None:
            return
        idx = torch.arange(len(self.val_y))[self.rank :: self.world]  # no padding: every sample counted once
        for start in range(0, len(idx), micro_batch):
            yield self.batch(self.val_x, self.val_y, idx[start : start + micro_batch], augment=False)


def decodes_on_gpu(decode: str, device: torch.device, workers: int, jpeg_only: bool) -> bool:
    """Whether a rank's JPEGs are decoded on its GPU: ``decode`` (auto | cpu | gpu) for its device and workers."""
    if decode == "auto":
        return device.type == "cuda" and jpeg_only and workers < CPU_DECODE_MIN_WORKERS
    return decode == "gpu"


def loader_workers(params: TrialParams) -> int:
    """``loader_workers``, or with 0 every CPU the rank holds but the one its training loop runs on."""
    if params.loader_workers:
        return params.loader_workers
    held = int(params.cpus_per_worker) if params.cpus_per_worker >= 1 else 1
    return max(1, min(held, os.cpu_count() or 1) - 1)


def make_batches(
    params: TrialParams, data: ImageData, device: torch.device, image_size: int, input_dtype: torch.dtype, rank: int
) -> Batches:
    """This rank's batches; ranks of one sequence- or tensor-parallel group share a data-parallel rank, hence
    samples."""
    loading = FolderLoading(
        CropRecipe(params.crop_scale_min, params.crop_ratio_min, params.crop_ratio_max, params.flip),
        params.in_chans,
        params.decode,
        loader_workers(params),
        params.skip_bad_files,
    )
    data = folder_to_read(params, data, image_size, loading.workers, rank)
    dp_rank = rank // params.model_parallel_size
    return Batches(data, device, image_size, input_dtype, dp_rank, params.data_parallel_size, params.seed, loading)


def folder_to_read(params: TrialParams, data: ImageData, image_size: int, workers: int, rank: int) -> ImageData:
    """``data`` reading the image folder's copy: its pixel copy with ``prepare=pixels``, its JPEG copy where
    that pays (``prepare=auto``), else unchanged.

    The first trial on a node builds the copy with ``workers`` processes (its ranks there wait on the lock);
    every later trial of the sweep, and of later sweeps over the unchanged folder, reuses it.  An arrays
    folder is read as it is (no decode to save); what is prepared for it is its channel statistics.
    """
    if data.folder is not None and isinstance(data.folder.train, ArraySplit):
        return dataclasses.replace(data, stats=array_stats(params.data_dir, data.folder, workers))
    if data.folder is None or params.prepare == "off":
        return data
    if params.prepare == "pixels":
        folder, copy = pixel_copy(params.data_dir, data.folder, image_size, params.in_chans, workers), "pixel"
    elif pays_to_prepare(data.folder, image_size):
        folder, copy = prepared_index(params.data_dir, data.folder, workers), "prepared"
    else:
        return data
    if rank == 0:
        print(f"raysweep: imagefolder reads its {copy} copy under {cache_root(params.data_dir)}", flush=True)
    return dataclasses.replace(data, folder=folder)
