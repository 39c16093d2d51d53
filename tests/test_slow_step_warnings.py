"""Tune's slow-step warnings go to the driver's log file in Ray's logs directory, not the terminal; Tune's other
warnings still reach it (``raysweep.runtime.ray_logs.slow_step_warnings_to_file``)."""

from __future__ import annotations

import logging
import time

import ray.tune.utils.util as tune_util

from raysweep.runtime.ray_logs import DRIVER_LOG, SLOW_STEP_LOGGER, ToFile, slow_step_warnings_to_file


class Recorded(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_a_slow_tune_step_warns_into_the_driver_log_and_other_warnings_reach_the_terminal(tmp_path, monkeypatch):
    # warn_if_slow stays silent for the first minute of the process: this one has just started
    monkeypatch.setattr(tune_util, "START_OF_TIME", time.time() - 120)
    logger = logging.getLogger(SLOW_STEP_LOGGER)
    terminal = Recorded()  # where the logger's handlers would print them
    logger.addHandler(terminal)
    try:
        slow_step_warnings_to_file(str(tmp_path / "first"))  # a sweep before, in the same process: replaced
        (tmp_path / "logs").mkdir()
        slow_step_warnings_to_file(str(tmp_path / "logs"))
        assert len([f for f in logger.filters if isinstance(f, ToFile)]) == 1
        with tune_util.warn_if_slow("callbacks.on_trial_result", threshold=1e-6):
            time.sleep(0.01)
        logger.warning("Tune's other warning")
    finally:
        logger.removeHandler(terminal)
        for f in [f for f in logger.filters if isinstance(f, ToFile)]:
            logger.removeFilter(f)
            f.handler.close()
    written = (tmp_path / "logs" / DRIVER_LOG).read_text()
    assert "The `callbacks.on_trial_result` operation took" in written and "performance bottleneck" in written
    assert "other warning" not in written
    assert terminal.messages == ["Tune's other warning"]
    assert not (tmp_path / "first").exists()
