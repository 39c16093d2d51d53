"""A live view of a sweep in the terminal (the sweep-level gauges are in raysweep/watch/sweep_metrics.py).

``ProgressCallback`` runs in the CLI's process as a Tune callback, in one of ``PROGRESS_STYLES``:

- ``lines``: on a terminal it keeps one status line up to date in place; on a plain log (stdout not a
  TTY: CI, ``| tee``, a file) it writes whole lines only, with no control characters: one per trial
  event (start, epoch, end) and a heartbeat at most every ``heartbeat_s`` seconds, so a log stays readable;
- ``bar``: a progress bar of finished trials (tqdm) with the counts and the best value beside it, and a
  line for each failed trial;
- ``quiet``: a line for each failed trial only (the sweep's summary still follows).

"Best" is the best value reported so far of the sweep's metric, in its mode (``raysweep.core.ranking``);
under the default ranking, the throughput.
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections.abc import Callable
from typing import TextIO

from ray.tune import Callback

import raysweep.interrupt as interrupt
from raysweep.core.params import TrialParams
from raysweep.core.ranking import DEFAULT_RANKING, Ranking
from raysweep.core.spec import SPEC_KEY, spec_of
from raysweep.core.status import TrialStatus, trial_outcome
from raysweep.watch.sweep_metrics import SweepCounts, SweepMetrics

# Tune's trial statuses, grouped into what a person watching a sweep cares about.
RUNNING_STATES = ("RUNNING", "PAUSED")
PROGRESS_STYLES = ("lines", "bar", "quiet")
METRICS_EVERY_S = 5.0
CONTROL_CHARS = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x1f\x7f]")  # escape sequences whole, then any C0


def estimate_remaining(elapsed_s: float, done_fraction: float) -> float | None:
    """Seconds left if the rest goes at the pace so far; None until some work is done."""
    if done_fraction <= 0 or elapsed_s <= 0:
        return None
    if done_fraction >= 1:
        return 0.0
    return elapsed_s * (1 - done_fraction) / done_fraction


def format_duration(seconds: float | None) -> str:
    if seconds is None or math.isnan(seconds):
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def best_text(counts: SweepCounts, ranking: Ranking = DEFAULT_RANKING) -> str:
    """``best 250.0 samples/s`` under the default ranking, ``best val_accuracy 0.9391`` under a metric."""
    if ranking.metric == "throughput":
        return f"best {counts.best_throughput:.1f} samples/s" if counts.best_throughput else "best -"
    value = "-" if counts.best_value is None else f"{counts.best_value:.4g}"
    return f"best {ranking.metric} {value}"


def state_text(counts: SweepCounts) -> str:
    return (
        f"{counts.finished}/{counts.total} done ({counts.completed} completed, "
        f"{f'{counts.stopped} stopped, ' if counts.stopped else ''}{counts.failed} failed), "
        f"{counts.running} running, {counts.pending} pending"
    )


def status_line(counts: SweepCounts, elapsed_s: float, ranking: Ranking = DEFAULT_RANKING) -> str:
    eta = estimate_remaining(elapsed_s, counts.done_fraction)
    return (
        f"{state_text(counts)} | {best_text(counts, ranking)} | "
        f"elapsed {format_duration(elapsed_s)}, left ~{format_duration(eta)}"
    )


def plain(text: str) -> str:
    """One printable line: an error message may carry newlines or a colour code."""
    return " ".join(CONTROL_CHARS.sub(" ", text).split())


def params_of(trial) -> TrialParams | None:
    """The trial's parameters (None for a trial Tune holds no spec of)."""
    return spec_of(trial.config).params if SPEC_KEY in trial.config else None


def trial_label(trial) -> str:
    """``<trial_id> (w2 mb64 acc1)``, with the micro batch each rank trains (a fixed global batch sets it)."""
    params = params_of(trial)
    if params is None:
        return trial.trial_id
    return f"{trial.trial_id} ({params.batch_label(' ')})"


# What the view shows of a trial not yet ended, beside the statuses of ended ones.
RUNNING, PENDING = "running", "pending"
State = TrialStatus | str


def trial_state(trial, last: dict, known: dict[str, State]) -> State:
    """Its status once ended (the recorder's rule; ``oom`` counts as failed here), else running or pending.
    ``known`` holds what the callbacks just saw: Tune calls them before it updates the trial's status."""
    if trial.status == "TERMINATED":
        return trial_outcome(last)
    if trial.status == "ERROR":
        return TrialStatus.FAILED
    if trial.trial_id in known:
        return known[trial.trial_id]
    return RUNNING if trial.status in RUNNING_STATES else PENDING


def count_trials(
    trials: list,
    total: int,
    known: dict[str, State] | None = None,
    results: dict[str, dict] | None = None,
    ranking: Ranking = DEFAULT_RANKING,
) -> SweepCounts:
    """Trials by state, best throughput, the best value of ``ranking``'s metric and the share of work done.
    ``known`` and ``results`` are the states and last results the callbacks saw, newer than the Trial objects
    during a callback."""
    counts = SweepCounts(total=max(total, len(trials)))
    progress = 0.0
    for trial in trials:
        last = (results or {}).get(trial.trial_id) or trial.last_result or {}
        state = trial_state(trial, last, known or {})
        if state is TrialStatus.COMPLETED:
            progress += 1
            counts.completed += 1
        elif state is TrialStatus.STOPPED:
            progress += 1
            counts.stopped += 1
        elif isinstance(state, TrialStatus):
            progress += 1
            counts.failed += 1
        elif state == RUNNING:
            counts.running += 1
            params = params_of(trial)
            epochs = params.epochs if params else 0
            if epochs and "epoch" in last:
                progress += min(1.0, (last["epoch"] + 1) / epochs)
        throughput = last.get("throughput")
        if isinstance(throughput, (int, float)) and math.isfinite(throughput) and throughput > 0:
            counts.best_throughput = max(counts.best_throughput or 0.0, float(throughput))
        value = last.get(ranking.metric)
        if isinstance(value, (int, float)) and math.isfinite(value):
            better = counts.best_value is None or ranking.order_key(value) < ranking.order_key(counts.best_value)
            counts.best_value = float(value) if better else counts.best_value
    counts.done_fraction = progress / counts.total if counts.total else 0.0
    return counts


class ProgressCallback(Callback):
    """Prints the sweep's progress; publishes it to ``metrics`` (sweep-level gauges) when given one.

    Holds no stream or clock until the sweep starts: Tune pickles its callbacks with the
    experiment, and a resumed sweep unpickles this one.
    """

    def __init__(
        self,
        sweep: str,
        total: int,
        *,
        tty: bool | None = None,
        heartbeat_s: float = 30.0,
        redraw_s: float = 1.0,
        metrics: SweepMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        ranking: Ranking = DEFAULT_RANKING,
        style: str = "lines",
    ):
        self.sweep = sweep
        self.ranking = ranking
        self.style = style
        self.bar = None  # the tqdm bar of style "bar", made when the sweep starts
        self.total = total
        self.tty = tty
        self.heartbeat_s = heartbeat_s
        self.redraw_s = redraw_s
        self.metrics = metrics
        self.clock = clock
        self.started: float | None = None
        self.last_print = 0.0
        self.last_publish = 0.0
        self.drawn = False  # a TTY status line is on screen, waiting to be replaced
        self.known: dict[str, State] = {}
        self.results: dict[str, dict] = {}
        self.stream: TextIO | None = None

    def setup(self, **info) -> None:
        self.start()

    def start(self, stream: TextIO | None = None, now: float | None = None) -> None:
        self.stream = stream or sys.stdout
        if self.tty is None:
            self.tty = self.stream.isatty()
        self.started = self.clock() if now is None else now
        if self.style == "bar" and self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, desc=self.sweep, unit="trial", file=self.stream, mininterval=0)
        if self.metrics:
            self.metrics.start(self.sweep)

    # Tune's hooks: each trial event is one line; the step hook redraws or sends a heartbeat.
    def on_trial_start(self, iteration, trials, trial, **info):
        self.known[trial.trial_id] = RUNNING
        self.event(trials, f"trial {trial_label(trial)} started")

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if "epoch" not in result:
            return
        kept = ("epoch", "throughput", "final", self.ranking.metric)
        self.results[trial.trial_id] = {k: result[k] for k in kept if k in result}
        params = params_of(trial)
        epochs = params.epochs if params else "?"
        throughput = result.get("throughput")
        rate = f", {throughput:.1f} samples/s" if isinstance(throughput, (int, float)) else ""
        self.event(trials, f"trial {trial.trial_id} epoch {result['epoch'] + 1}/{epochs}{rate}")

    def on_trial_complete(self, iteration, trials, trial, **info):
        last = self.results.get(trial.trial_id) or trial.last_result or {}
        state = self.known[trial.trial_id] = trial_outcome(last)
        ended = "stopped early by the scheduler" if state is TrialStatus.STOPPED else state.value
        error = state not in (TrialStatus.COMPLETED, TrialStatus.STOPPED)
        self.event(trials, f"trial {trial.trial_id} {ended}", error=error)

    def on_trial_error(self, iteration, trials, trial, **info):
        self.known[trial.trial_id] = TrialStatus.FAILED
        self.event(trials, f"trial {trial.trial_id} failed", error=True)

    def on_step_end(self, iteration, trials, **info):
        self.tick(trials)

    def on_experiment_end(self, trials, **info):
        self.event(trials, "sweep interrupted" if interrupt.stop_requested() else "sweep finished")
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self.tty and self.drawn:
            self.write("\n")  # leave the final status line on screen, and the cursor below it
            self.drawn = False

    def event(self, trials: list, message: str, now: float | None = None, error: bool = False) -> None:
        """A trial event's line (``error``: a trial that failed, which every style shows)."""
        self.ensure_started()
        now = self.clock() if now is None else now
        counts = self.update(trials, now)
        line = f"{self.prefix(now)} {plain(message)}"
        if self.style == "quiet":
            if error:
                self.write(f"{line}\n")
        elif self.style == "bar":
            if error:
                self.bar.write(line, file=self.stream)
            self.show_bar(counts)
        elif self.tty:
            self.write(f"\r\x1b[2K{line}\n")
            self.drawn = False
            self.redraw(counts, now)
        else:
            self.write(f"{line} | {status_line(counts, now - self.started, self.ranking)}\n")
        self.last_print = now

    def tick(self, trials: list, now: float | None = None) -> None:
        self.ensure_started()
        now = self.clock() if now is None else now
        if now - self.last_print < (self.redraw_s if self.tty or self.style == "bar" else self.heartbeat_s):
            if self.metrics and now - self.last_publish >= METRICS_EVERY_S:
                self.update(trials, now)  # the gauges move even while the log stays quiet
            return
        counts = self.update(trials, now)
        if self.style == "bar":
            self.show_bar(counts)
        elif self.style == "quiet":
            pass
        elif self.tty:
            self.redraw(counts, now)
        else:
            self.write(f"{self.prefix(now)} {status_line(counts, now - self.started, self.ranking)}\n")
        self.last_print = now

    def redraw(self, counts: SweepCounts, now: float) -> None:
        self.write(f"\r\x1b[2K{status_line(counts, now - self.started, self.ranking)}")
        self.drawn = True

    def show_bar(self, counts: SweepCounts) -> None:
        """The bar at the finished trials, with the counts and the best value beside it."""
        self.bar.total = counts.total
        self.bar.n = counts.finished
        self.bar.set_postfix_str(f"{state_text(counts)} | {best_text(counts, self.ranking)}", refresh=False)
        self.bar.refresh()

    def update(self, trials: list, now: float) -> SweepCounts:
        counts = count_trials(trials, self.total, self.known, self.results, self.ranking)
        if self.metrics:
            self.metrics.publish(counts)
            self.last_publish = now
        return counts

    def prefix(self, now: float) -> str:
        return f"[{self.sweep} {format_duration(now - self.started)}]"

    def ensure_started(self) -> None:
        if self.started is None:
            self.start()

    def write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.update(stream=None, started=None, drawn=False, last_print=0.0, last_publish=0.0, bar=None)
        return state

    def __setstate__(self, state: dict) -> None:
        # a sweep started before the styles and rankings existed resumes with today's view
        self.__dict__.update({"ranking": DEFAULT_RANKING, "style": "lines", "bar": None, **state})
