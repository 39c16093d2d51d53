"""The one error type the command line turns into a one-line message and exit status 2."""


class UsageError(Exception):
    """Bad input from the user: a flag, a space file, a parameter value, a path."""


# What a device allocator (torch.OutOfMemoryError), CUDA, or Ray's memory monitor says.
OOM_MARKERS = ("OutOfMemoryError", "CUDA out of memory", "OutOfMemory", "out of memory")


def is_out_of_memory(error_text: str) -> bool:
    return any(marker in error_text for marker in OOM_MARKERS)
