"""Per-rank batches on the device: shard, move uint8 pixels, then normalise, augment and resize there."""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F

from trainers.datasets import ImageData

MEAN = torch.tensor([0.5, 0.5, 0.5]).view(1, 3, 1, 1)
STD = torch.tensor([0.5, 0.5, 0.5]).view(1, 3, 1, 1)


def to_model_input(pixels: torch.Tensor, image_size: int, dtype: torch.dtype, augment: bool) -> torch.Tensor:
    """uint8 (B, 3, h, w) on the device -> normalised float (B, 3, S, S), randomly flipped if ``augment``."""
    x = pixels.to(torch.float32).div_(255.0)
    x = (x - MEAN.to(x.device)) / STD.to(x.device)
    if x.shape[-1] != image_size or x.shape[-2] != image_size:
        x = F.interpolate(x, size=(image_size, image_size), mode="bilinear", align_corners=False)
    if augment:
        flip = torch.rand(x.shape[0], 1, 1, 1, device=x.device) < 0.5
        x = torch.where(flip, x.flip(-1), x)
    return x.to(dtype)


def shard_indices(num_samples: int, rank: int, world: int, epoch: int, seed: int, shuffle: bool) -> torch.Tensor:
    """This rank's sample indices for one epoch: DistributedSampler's order (padded to equal length)."""
    if shuffle:
        order = torch.randperm(num_samples, generator=torch.Generator().manual_seed(seed + epoch))
    else:
        order = torch.arange(num_samples)
    per_rank = -(-num_samples // world)
    padded = torch.cat([order, order[: per_rank * world - num_samples]]) if per_rank * world > num_samples else order
    return padded[rank::world]


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
    ):
        self.data, self.device, self.image_size, self.dtype = data, device, image_size, dtype
        self.rank, self.world, self.seed = rank, world, seed
        tensors = [data.train_x, data.train_y, data.val_x, data.val_y]
        size = sum(t.numel() * t.element_size() for t in tensors if t is not None)
        home = device if size <= DEVICE_RESIDENT_BYTES else torch.device("cpu")
        self.train_x, self.train_y, self.val_x, self.val_y = (None if t is None else t.to(home) for t in tensors)
        self.synthetic_x: torch.Tensor | None = None

    def batch(self, x: torch.Tensor, y: torch.Tensor, take: torch.Tensor, augment: bool):
        take = take.to(x.device)
        pixels = x[take].to(self.device, non_blocking=True)
        labels = y[take].to(self.device, non_blocking=True)
        return to_model_input(pixels, self.image_size, self.dtype, augment), labels

    def train(self, epoch: int, micro_batch: int, num_batches: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
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
            shape = (micro_batch, 3, self.image_size, self.image_size)
            self.synthetic_x = torch.randn(shape, generator=g, device=self.device).to(self.dtype)
            self.synthetic_y = torch.randint(0, self.data.num_classes, (micro_batch,), generator=g, device=self.device)
        for _ in range(num_batches):
            yield self.synthetic_x, self.synthetic_y

    def validation(self, micro_batch: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """This rank's share of the held-out split (nothing for synthetic data)."""
        if self.val_x is None:
            return
        idx = torch.arange(len(self.val_y))[self.rank :: self.world]  # no padding: every sample counted once
        for start in range(0, len(idx), micro_batch):
            yield self.batch(self.val_x, self.val_y, idx[start : start + micro_batch], augment=False)
