"""The errors the layers share: bad input (``UsageError``) and a rank out of memory (``RankOutOfMemory``)."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user: a flag, a space file, a parameter value, a path."""


# What a device allocator (torch.OutOfMemoryError), CUDA, or Ray's memory monitor says.
OOM_MARKERS = ("OutOfMemoryError", "CUDA out of memory", "OutOfMemory", "out of memory")


def is_out_of_memory(error_text: str) -> bool:
    return any(marker in error_text for marker in OOM_MARKERS)


class RankOutOfMemory(RuntimeError):
    """A rank ran out of device (or budgeted CPU) memory; carries the peak it reached, for the trial's row."""

    def __init__(self, rank: int, detail: str, peak_mem_gib: float):
        super().__init__(f"OutOfMemoryError on rank {rank}: {detail} (peak_mem_gib={peak_mem_gib:.3f})")
        self.rank, self.detail, self.peak_mem_gib = rank, detail, peak_mem_gib

    def __reduce__(self):  # its arguments, not its message: it crosses processes pickled
        return (type(self), (self.rank, self.detail, self.peak_mem_gib))
