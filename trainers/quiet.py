"""Quiet ranks: drop the start-up lines that torch and DeepSpeed print on every CPU rank and that tell a user nothing.

Ray runs ``quiet_worker`` in every worker process as it starts (the runtime environment's
``worker_process_setup_hook``, set in ``raysweep.runtime.cluster``), before a trial imports DeepSpeed.
Only these exact messages are dropped; every other warning and line still reaches the terminal.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

# logger name -> the starts of its messages that are dropped
NOISE_LOGS: dict[str, tuple[str, ...]] = {
    # logged when torch.utils.cpp_extension is imported on a machine that has a CUDA toolkit but no
    # GPU, and each time an extension is loaded from its cache
    "torch.utils.cpp_extension": ("No CUDA runtime is found", "Loading extension module"),
    # Ray Train's workers turn every print into a record of the root logger (its print patch)
    "": ("DeepSpeed deepspeed.ops.comm.deepspeed_shm_comm_op built successfully",),
}
# printed by DeepSpeed's CPU backend on every rank; Ray Train's print patch also writes each print
# to the worker's sys.stdout, so these are dropped from both
NOISE_PRINTS: tuple[str, ...] = NOISE_LOGS[""]


class DropMessages(logging.Filter):
    """Drops a logger's records whose message starts with one of ``prefixes``."""

    def __init__(self, prefixes: tuple[str, ...]):
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.prefixes)


class DropPrints:
    """A text stream that passes everything on except ``print`` calls of the given lines.

    ``print(text)`` writes ``text`` and then its line end in two calls; a dropped text takes
    the line end that follows it along.
    """

    def __init__(self, stream: TextIO, lines: tuple[str, ...]):
        self.stream = stream
        self.lines = lines
        self.dropped_line = False

    def write(self, text: str) -> int:
        if text.startswith(self.lines):
            self.dropped_line = True
            return len(text)
        if self.dropped_line and text == "\n":
            self.dropped_line = False
            return len(text)
        self.dropped_line = False
        return self.stream.write(text)

    def __getattr__(self, name: str):  # flush, fileno, isatty, encoding, ... of the real stream
        return getattr(self.stream, name)


def quiet_noise_logs() -> None:
    """Filter the noise loggers of this process (once; the driver calls it too, before it builds the CPU op).

    A logger's filters survive Ray Train's ``logging.config.dictConfig`` of the worker's loggers,
    which replaces their handlers only.
    """
    for name, prefixes in NOISE_LOGS.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, DropMessages) for f in logger.filters):
            logger.addFilter(DropMessages(prefixes))


def quiet_worker() -> None:
    """Ray's worker-process setup hook: filter the noise loggers and this process's noise prints."""
    quiet_noise_logs()
    if not isinstance(sys.stdout, DropPrints):
        sys.stdout = DropPrints(sys.stdout, NOISE_PRINTS)
