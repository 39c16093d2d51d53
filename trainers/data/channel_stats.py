"""Per-channel normalisation: the mean and standard deviation a batch is shifted and scaled by on the device.

Images are uint8 and normalised alike in every channel, [0, 255] -> [-1, 1] (``IMAGE_STATS``).  Scientific
arrays have their own range per channel (a 16-bit detector, a float field), so their statistics are measured
once over the training split (``trainers.data.arrays.array_stats``) and kept with the folder's prepared data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ChannelStats:
    """Mean and standard deviation in the stored values' units: one per channel, or one for every channel."""

    mean: tuple[float, ...]
    std: tuple[float, ...]

    def normalise(self, x: torch.Tensor) -> torch.Tensor:
        """float (B, C, H, W) in stored units -> (x - mean) / std, per channel."""
        mean = torch.tensor(self.mean, dtype=x.dtype, device=x.device)[:, None, None]
        std = torch.tensor(self.std, dtype=x.dtype, device=x.device)[:, None, None]
        return (x - mean) / std

    @classmethod
    def from_sums(cls, count: int, sums: list[float], squares: list[float]) -> ChannelStats:
        """From the pixel count per channel and each channel's sum and sum of squares (float64 accumulations).

        A constant channel has standard deviation 1, not 0: it is shifted to 0 and left unscaled.
        """
        mean = [s / count for s in sums]
        variance = [max(q / count - m * m, 0.0) for q, m in zip(squares, mean)]
        return cls(tuple(mean), tuple(math.sqrt(v) if v > 0 else 1.0 for v in variance))


# uint8 pixels in every channel: [0, 255] -> [-1, 1]
IMAGE_STATS = ChannelStats(mean=(127.5,), std=(127.5,))
