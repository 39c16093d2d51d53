"""The terminal progress view and sweep gauges, driven by fake trials (no Ray started)."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace

import pytest
import ray.cloudpickle as cloudpickle

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from raysweep.core.ranking import Ranking
from raysweep.options import SweepOptions
from raysweep.progress import (
    PROGRESS_STYLES,
    ProgressCallback,
    SweepCounts,
    count_trials,
    estimate_remaining,
    format_duration,
    status_line,
    trial_label,
)
from raysweep.tune import parse_command
from raysweep.watch.sweep_metrics import SweepMetrics, metrics_urls
from raysweep.watch.tensorboard_logger import run_name
from tests.specs import tune_config

# Anything a plain log must not hold: C0 controls but newline, DEL, and escape sequences.
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


def fake_trial(trial_id: str, status: str, epoch: int | None = None, epochs: int = 2, throughput=None, final=None):
    last = {}
    if epoch is not None:
        last = {"epoch": epoch, "throughput": throughput, "final": final if final is not None else epoch == epochs - 1}
    params = TrialParams(num_workers=2, micro_batch_per_worker=16, grad_accum_steps=1, epochs=epochs)
    return SimpleNamespace(trial_id=trial_id, status=status, config=tune_config(params), last_result=last)


# ---- ETA math ---------------------------------------------------------------------------------


def test_estimate_remaining_extrapolates_the_pace_so_far():
    assert estimate_remaining(60.0, 0.25) == 180.0  # a quarter done in a minute: three minutes left
    assert estimate_remaining(60.0, 0.5) == 60.0
    assert estimate_remaining(60.0, 1.0) == 0.0
    assert estimate_remaining(60.0, 0.0) is None  # nothing done yet: no estimate, not infinity
    assert estimate_remaining(0.0, 0.5) is None


def test_format_duration():
    assert format_duration(None) == "?"
    assert format_duration(7.4) == "7s"
    assert format_duration(125) == "2m05s"
    assert format_duration(3 * 3600 + 4 * 60 + 59) == "3h04m"


def test_done_fraction_counts_running_trials_by_epochs_done():
    trials = [
        fake_trial("a", "TERMINATED", epoch=1, throughput=100.0),  # completed: 1
        fake_trial("b", "ERROR"),  # failed: 1
        fake_trial("c", "RUNNING", epoch=0, epochs=4, throughput=250.0),  # 1 of 4 epochs: 0.25
        fake_trial("d", "PENDING"),  # 0
    ]
    counts = count_trials(trials, total=5)  # one more trial not yet created by the searcher
    assert (counts.completed, counts.failed, counts.running, counts.pending) == (1, 1, 1, 2)
    assert counts.done_fraction == (1 + 1 + 0.25) / 5
    assert counts.best_throughput == 250.0
    line = status_line(counts, elapsed_s=90)
    assert "2/5 done (1 completed, 1 failed), 1 running, 2 pending" in line
    assert "best 250.0 samples/s" in line and "left ~1m50s" in line  # 90 s * (1 - 0.45) / 0.45


def test_trial_ended_before_its_last_epoch_counts_as_stopped():
    """Tune ends a trial that reported, before its last epoch, only when the sweep's scheduler stops it."""
    counts = count_trials([fake_trial("a", "TERMINATED", epoch=0, final=False)], total=1)
    assert (counts.completed, counts.stopped, counts.failed, counts.finished) == (0, 1, 0, 1)


def test_callback_knowledge_is_newer_than_trial_status():
    """Tune calls on_trial_complete while the trial still says RUNNING."""
    trial = fake_trial("a", "RUNNING", epoch=0)
    view = ProgressCallback("s", total=1, tty=False)
    view.start(io.StringIO(), now=0.0)
    view.on_trial_result(0, [trial], trial, {"epoch": 1, "throughput": 80.0, "final": True})
    view.on_trial_complete(0, [trial], trial)
    assert "1/1 done (1 completed, 0 failed), 0 running, 0 pending | best 80.0" in view.stream.getvalue()


# ---- plain log and terminal -------------------------------------------------------------------


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def drive(view: ProgressCallback) -> str:
    """A short sweep: two trials, one fails with a colourful multi-line message, ticks every second."""
    out, clock = io.StringIO(), FakeClock()
    view.clock = clock
    view.start(out)
    a, b = fake_trial("a", "PENDING"), fake_trial("b", "PENDING")
    trials = [a, b]
    a.status = "RUNNING"
    view.on_trial_start(0, trials, a)
    for t in range(1, 40):
        clock.now = float(t)
        view.tick(trials)
    clock.now = 45.0
    view.on_trial_result(0, trials, a, {"epoch": 0, "throughput": 120.0, "final": False})
    a.last_result = {"epoch": 0, "throughput": 120.0, "final": False}
    view.on_trial_start(0, trials, b)
    b.status = "RUNNING"
    view.on_trial_error(0, trials, b)
    b.status = "ERROR"
    view.event(trials, "trial b failed: \x1b[31mRuntimeError\x1b[0m\nboom\r")
    view.on_trial_result(0, trials, a, {"epoch": 1, "throughput": 130.0, "final": True})
    view.on_trial_complete(0, trials, a)
    a.status = "TERMINATED"
    view.on_experiment_end(trials)
    return out.getvalue()


def test_plain_log_has_whole_lines_without_control_characters():
    text = drive(ProgressCallback("sweep1", total=2, tty=False, heartbeat_s=30.0))
    assert not CONTROL.search(text), repr(text)
    assert "\x1b" not in text and "\r" not in text
    lines = text.splitlines()
    assert all(line.startswith("[sweep1 ") for line in lines)
    assert any("trial a (w2 mb16 acc1) started" in line for line in lines)
    assert any("trial b failed: RuntimeError boom" in line for line in lines)  # flattened, no ESC
    assert "sweep finished | 2/2 done (1 completed, 1 failed), 0 running, 0 pending | best 130.0" in lines[-1]


def test_trial_label_names_the_micro_batch_a_fixed_global_batch_gives_each_rank():
    # strong_scaling fixes global_batch 256: at 2 ranks each trains 128, whatever micro_batch_per_worker says
    params = TrialParams(num_workers=2, micro_batch_per_worker=32, global_batch=256)
    trial = SimpleNamespace(trial_id="t1", config=tune_config(params))
    assert trial_label(trial) == "t1 (w2 mb128 acc1)"
    assert trial_label(SimpleNamespace(trial_id="t2", config={})) == "t2"


def test_plain_log_heartbeat_at_most_every_interval():
    """39 one-second ticks between events: one heartbeat at 30 s, not 39 lines."""
    text = drive(ProgressCallback("s", total=2, tty=False, heartbeat_s=30.0))
    heartbeats = [line for line in text.splitlines() if line.startswith("[s 30s] 0/2 done")]
    assert len(heartbeats) == 1
    assert len(text.splitlines()) == 9  # 7 trial events, the heartbeat and the end


def test_terminal_redraws_one_status_line_in_place():
    text = drive(ProgressCallback("s", total=2, tty=True, heartbeat_s=30.0, redraw_s=1.0))
    assert "\r\x1b[2K" in text  # the status line is replaced, not appended
    assert text.endswith("\n")  # the cursor is left below the final status line
    last_line = text.rsplit("\r\x1b[2K", 1)[-1]
    assert last_line.startswith("2/2 done (1 completed, 1 failed)")


def test_callback_pickles_without_its_stream():
    """Tune pickles callbacks with the experiment (tuner.pkl); a resumed sweep unpickles them."""
    view = ProgressCallback("s", total=3, tty=False, metrics=SweepMetrics())
    view.start(io.StringIO(), now=0.0)
    copy = cloudpickle.loads(cloudpickle.dumps(view))
    assert copy.stream is None and copy.started is None and copy.total == 3


class FakeGauge:
    def __init__(self):
        self.value = None

    def set(self, value):
        self.value = value


def test_sweep_metrics_publish_every_state():
    metrics = SweepMetrics()
    names = ["trials_total", "trials_completed", "trials_failed", "trials_running", "trials_pending"]
    metrics.gauges = {name: FakeGauge() for name in [*names, "best_samples_per_second"]}
    metrics.publish(SweepCounts(total=5, completed=2, failed=1, running=1, best_throughput=42.0))
    assert [metrics.gauges[n].value for n in names] == [5, 2, 1, 1, 1]
    assert metrics.gauges["best_samples_per_second"].value == 42.0


def test_metrics_urls_name_only_alive_nodes_whose_metrics_agent_listens():
    nodes = [
        {"Alive": True, "NodeManagerAddress": "127.0.0.1", "MetricsExportPort": 44915},
        {"Alive": True, "NodeManagerAddress": "10.0.0.2", "MetricsExportPort": -1},  # its agent did not start
        {"Alive": False, "NodeManagerAddress": "10.0.0.3", "MetricsExportPort": 8080},
        {"Alive": True, "NodeManagerAddress": "10.0.0.4"},
    ]
    assert metrics_urls(nodes) == ["http://127.0.0.1:44915/metrics"]


def test_tensorboard_run_named_by_parameters():
    params = TrialParams.from_dict({"num_workers": 2, "micro_batch_per_worker": 64})
    assert run_name("ab12_00003", params) == "ab12_00003-w2-mb64-acc1"
    params = TrialParams.from_dict({"num_workers": 2, "micro_batch_per_worker": 64, "zero_stage": 2})
    assert run_name("ab12_00003", params) == "ab12_00003-w2-mb64-acc1-z2"


# ---- the sweep's metric, and the lines / bar / quiet styles -----------------------------------------------


def test_best_follows_the_sweeps_metric_in_its_mode():
    a = fake_trial("a", "RUNNING", epoch=0, throughput=300.0)
    b = fake_trial("b", "RUNNING", epoch=0, throughput=100.0)
    a.last_result["train_loss"], b.last_result["train_loss"] = 0.9, 0.4
    a.last_result["val_accuracy"], b.last_result["val_accuracy"] = 0.7, float("nan")
    loss = count_trials([a, b], total=2, ranking=Ranking("train_loss", "min"))
    assert loss.best_value == 0.4 and loss.best_throughput == 300.0
    assert "| best train_loss 0.4 |" in status_line(loss, 10.0, Ranking("train_loss", "min"))
    accuracy = count_trials([a, b], total=2, ranking=Ranking("val_accuracy", "max"))
    assert accuracy.best_value == 0.7  # a NaN is no value
    nothing_yet = count_trials([], total=2, ranking=Ranking("val_accuracy"))
    assert "| best val_accuracy - |" in status_line(nothing_yet, 1.0, Ranking("val_accuracy"))


def test_without_a_metric_the_line_keeps_the_best_throughput():
    counts = count_trials([fake_trial("a", "RUNNING", epoch=0, throughput=250.0)], total=1)
    assert "| best 250.0 samples/s |" in status_line(counts, 10.0)


def test_the_callback_shows_the_best_value_of_its_metric():
    trial = fake_trial("a", "RUNNING", epoch=0)
    view = ProgressCallback("s", total=1, tty=False, ranking=Ranking("val_accuracy", "max"))
    view.start(io.StringIO(), now=0.0)
    view.on_trial_result(0, [trial], trial, {"epoch": 1, "throughput": 80.0, "final": True, "val_accuracy": 0.93})
    view.on_trial_complete(0, [trial], trial)
    assert "| best val_accuracy 0.93 |" in view.stream.getvalue()


def test_quiet_prints_only_failed_trials():
    text = drive(ProgressCallback("s", total=2, tty=False, style="quiet"))
    assert text.splitlines() == ["[s 45s] trial b failed"]  # drive's own event line is no error: not shown


def test_bar_draws_a_progress_bar_of_finished_trials_and_prints_failures():
    text = drive(ProgressCallback("s", total=2, tty=False, style="bar"))
    assert "trial b failed" in text
    assert "trial a (w2 mb16 acc1) started" not in text  # events other than failures are the bar's
    final = text.split("\r")[-1]
    assert "2/2" in final and "100%" in final and "best 130.0 samples/s" in final
    assert "0/2" in text  # drawn before any trial finished


def test_a_bar_callback_pickles_without_its_bar():
    view = ProgressCallback("s", total=3, style="bar")
    view.start(io.StringIO(), now=0.0)
    copy = cloudpickle.loads(cloudpickle.dumps(view))
    assert copy.bar is None and copy.style == "bar"


@pytest.mark.parametrize("style", PROGRESS_STYLES)
def test_every_style_is_accepted(style):
    SweepOptions(progress=style).check()
    assert parse_command(["--space", "batch_grid", "--progress", style]).options.progress == style


def test_an_unknown_style_is_one_line_naming_the_allowed_ones():
    with pytest.raises(UsageError, match=r"^--progress must be one of lines, bar, quiet, got 'bars'; did you mean"):
        SweepOptions(progress="bars").check()
