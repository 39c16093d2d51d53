"""Quiet ranks: drop the start-up lines that torch and DeepSpeed print on every CPU rank and that tell a user nothing.

Ray runs ``quiet_noise_logs`` in every worker process as it starts (the runtime environment's
``worker_process_setup_hook``, set in ``raysweep.cluster``), before a trial imports DeepSpeed.
Only these exact messages are dropped; every other warning and line still reaches the terminal.
"""

from __future__ import annotations

import logging

# logger name -> the starts of its messages that are dropped
NOISE_LOGS: dict[str, tuple[str, ...]] = {
    # logged when torch.utils.cpp_extension is imported on a machine that has a CUDA toolkit but no
    # GPU, and each time an extension is loaded from its cache
    "torch.utils.cpp_extension": ("No CUDA runtime is found", "Loading extension module"),
    # DeepSpeed's CPU backend prints this on every rank; Ray Train's workers turn each print into a
    # record of the root logger (its print patch), so it is filtered there
    "": ("DeepSpeed deepspeed.ops.comm.deepspeed_shm_comm_op built successfully",),
}


class DropMessages(logging.Filter):
    """Drops a logger's records whose message starts with one of ``prefixes``."""

    def __init__(self, prefixes: tuple[str, ...]):
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.prefixes)


def quiet_noise_logs() -> None:
    """Filter the noise loggers of this process (once; the driver calls it too, before it builds the CPU op).

    A logger's filters survive Ray Train's ``logging.config.dictConfig`` of the worker's loggers,
    which replaces their handlers only.
    """
    for name, prefixes in NOISE_LOGS.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, DropMessages) for f in logger.filters):
            logger.addFilter(DropMessages(prefixes))
