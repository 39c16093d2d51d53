"""The errors the layers share: bad input (``UsageError``), a file the dataset cannot read (``DataFileError``) and
a rank out of memory (``RankOutOfMemory``)."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user: a flag, a space file, a parameter value, a path."""


class DataFileError(UsageError):
    """A file of the dataset that cannot be read: bad input, found by the planning check or by a rank reading it.

    ``path`` is as the dataset lists it (under the trial's ``data_dir``), ``dataset`` the dataset's name,
    ``reason`` what is wrong (``cannot be decoded (...)``).  ``resume`` (the command that continues the sweep)
    is added where a sweep stopped on it and continues once the file is fixed.
    """

    def __init__(self, path: str, dataset: str, reason: str, resume: str | None = None):
        if resume is None:
            advice = "fix or remove it, or set skip_bad_files=true to skip the files that cannot be read"
        else:  # a resumed sweep keeps its trials' parameters: skipping needs a new sweep
            advice = (
                f"fix or remove it, then continue with: {resume} "
                "(or run the sweep again with --set skip_bad_files=true)"
            )
        super().__init__(f"{dataset}: {path} {reason}; {advice}")
        self.path, self.dataset, self.reason, self.resume = path, dataset, reason, resume

    def __reduce__(self):  # its arguments, not its message: it crosses processes pickled
        return (type(self), (self.path, self.dataset, self.reason, self.resume))

    def resumable_with(self, command: str) -> DataFileError:
        """The same error, saying which command continues the sweep once the file is fixed."""
        return DataFileError(self.path, self.dataset, self.reason, resume=command)


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
