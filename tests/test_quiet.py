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


@pytest.fixture
def restore_filters():
    """The noise loggers as a fresh process has them, restored afterwards.

    Earlier tests in the same process (Ray, DeepSpeed, a ``dictConfig``) may have disabled a logger or
    raised its level; that is their state, not the filters' behaviour under test.
    """
    loggers = [logging.getLogger(name) for name in NOISE_LOGS]
    before = [(list(lg.filters), lg.disabled, lg.level, lg.propagate) for lg in loggers]
    for logger in loggers:
        logger.disabled, logger.propagate = False, True
        logger.setLevel(logging.NOTSET)
    yield
    for logger, (filters, disabled, level, propagate) in zip(loggers, before):
        logger.filters[:] = filters
        logger.disabled, logger.propagate = disabled, propagate
        logger.setLevel(level)


def test_quiet_noise_logs_filters_each_noise_logger_once_and_lets_the_rest_through(caplog, restore_filters):
    quiet_noise_logs()
    quiet_noise_logs()
    for name in NOISE_LOGS:
        assert sum(isinstance(f, DropMessages) for f in logging.getLogger(name).filters) == 1
    with caplog.at_level(logging.INFO):
        logging.getLogger("torch.utils.cpp_extension").warning("No CUDA runtime is found, using CUDA_HOME='/x'")
        logging.getLogger("torch.utils.cpp_extension").warning("a real problem")
        # what Ray Train's patched print does with a worker's print()
        logging.getLogger().log(logging.INFO, "DeepSpeed deepspeed.ops.comm.deepspeed_shm_comm_op built successfully")
        logging.getLogger().log(logging.INFO, "epoch 1 done")
    assert [r.getMessage() for r in caplog.records] == ["a real problem", "epoch 1 done"]


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
