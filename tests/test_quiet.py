"""Quiet ranks: exactly the CPU start-up noise is dropped; every other log record and printed line gets through."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from trainers.quiet import NOISE_LOGS, NOISE_PRINTS, DropMessages, DropPrints, quiet_noise_logs, quiet_worker

SHM_LINE = "DeepSpeed deepspeed.ops.comm.deepspeed_shm_comm_op built successfully"


@pytest.mark.parametrize(
    ("logger", "message", "kept"),
    [
        ("torch.utils.cpp_extension", "No CUDA runtime is found, using CUDA_HOME='/usr/local'", False),
        ("torch.utils.cpp_extension", "Loading extension module deepspeed_shm_comm...", False),
        ("torch.utils.cpp_extension", "something else went wrong", True),
        ("", "DeepSpeed deepspeed.ops.comm.deepspeed_shm_comm_op built successfully", False),
        ("", "raysweep: resumed from checkpoint after epoch 1", True),
    ],
)
def test_drop_messages_drops_only_records_that_start_with_a_noise_prefix(logger, message, kept):
    record = logging.LogRecord(logger, logging.WARNING, __file__, 1, message, None, None)
    assert DropMessages(NOISE_LOGS[logger]).filter(record) is kept


class Collect(logging.Handler):
    """Keeps the messages that reach it."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def restore_filters():
    """Each noise logger collecting its own records, as a fresh process has it; all restored afterwards.

    Earlier tests in the same process may have disabled a logger, raised its level, or (torch's own
    logging, once something imports it) stopped ``torch.*`` records from propagating to the root: that is
    their state, not the filters' behaviour under test, so each logger gets a handler of its own and
    does not propagate.
    """
    loggers = [logging.getLogger(name) for name in NOISE_LOGS]
    before = [(list(lg.filters), lg.disabled, lg.level, lg.propagate) for lg in loggers]
    collected = {name: Collect() for name in NOISE_LOGS}
    disabled_below = logging.root.manager.disable
    logging.disable(logging.NOTSET)
    for name, logger in zip(NOISE_LOGS, loggers):
        logger.addHandler(collected[name])
        logger.disabled, logger.propagate = False, False
        logger.setLevel(logging.INFO)
    yield collected
    logging.disable(disabled_below)
    for name, logger, (filters, disabled, level, propagate) in zip(NOISE_LOGS, loggers, before):
        logger.removeHandler(collected[name])
        logger.filters[:] = filters
        logger.disabled, logger.propagate = disabled, propagate
        logger.setLevel(level)


def test_quiet_noise_logs_filters_each_noise_logger_once_and_lets_the_rest_through(restore_filters):
    quiet_noise_logs()
    quiet_noise_logs()
    for name in NOISE_LOGS:
        assert sum(isinstance(f, DropMessages) for f in logging.getLogger(name).filters) == 1
    logging.getLogger("torch.utils.cpp_extension").warning("No CUDA runtime is found, using CUDA_HOME='/x'")
    logging.getLogger("torch.utils.cpp_extension").warning("a real problem")
    # what Ray Train's patched print does with a worker's print()
    logging.getLogger().log(logging.INFO, "DeepSpeed deepspeed.ops.comm.deepspeed_shm_comm_op built successfully")
    logging.getLogger().log(logging.INFO, "epoch 1 done")
    assert restore_filters["torch.utils.cpp_extension"].messages == ["a real problem"]
    assert restore_filters[""].messages == ["epoch 1 done"]


def test_a_filter_survives_a_dict_config_of_the_loggers_as_ray_train_does(restore_filters):
    import logging.config

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        quiet_noise_logs()
        logging.config.dictConfig({"version": 1, "disable_existing_loggers": False, "root": {"level": "INFO"}})
        assert any(isinstance(f, DropMessages) for f in root.filters)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def test_drop_prints_drops_the_noise_line_with_its_line_end_and_keeps_the_rest():
    out = io.StringIO()
    stream = DropPrints(out, NOISE_PRINTS)
    print("epoch 1", file=stream)
    print(SHM_LINE, file=stream)
    print("", file=stream)  # an empty line that does not follow a dropped one stays
    print("a", "b", sep="\n", file=stream)  # a bare line end between two kept texts stays
    stream.flush()  # the real stream's own methods
    assert out.getvalue() == "epoch 1\n\na\nb\n"


def test_quiet_worker_wraps_stdout_once(monkeypatch, restore_filters):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    quiet_worker()
    quiet_worker()
    assert isinstance(sys.stdout, DropPrints) and sys.stdout.stream is out
    print(SHM_LINE)
    print("kept")
    assert out.getvalue() == "kept\n"
