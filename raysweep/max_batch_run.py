"""``--find-max-batch`` on Ray: each round of probes is a Tune run of its own, then the sweep is clipped.

A round's probes are real trials through the sweep's own machinery (``FitSearcher``, the Tune
function trainable, ``TorchTrainer``), under ``<sweep>/max_batch/probes-<round>/``; their rows are
written there by the CLI-side recorder and read back here, so nothing is written from workers. The
verdict, one row per configuration, is ``<sweep>/max_batch/max_batch.parquet``, written by this
process once the search is over; a sweep that finds it (run again under its name) uses it and does
not search again.
"""

from __future__ import annotations

import shutil
from typing import Any

import pyarrow.parquet as pq

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from raysweep.core.status import TrialStatus
from raysweep.core.store import ResultStore, atomic_write_table
from raysweep.options import SweepOptions
from raysweep.planning.max_batch import (
    ProbeOutcome,
    SearchLimits,
    clip_to_edges,
    configurations,
    find_max_batches,
    max_batch_path,
    max_batch_table,
)
from raysweep.results.recorder import ResultTablesCallback
from raysweep.sweep import fit_trials, trials_tuner, worker_groups


class ProbeRounds:
    """The search's probe: one Tune run per round, its outcomes read from the rows the recorder wrote."""

    def __init__(self, options: SweepOptions, store: ResultStore):
        self.options = options
        self.store = store
        self.rounds = 0

    def __call__(self, trials: list[TrialParams]) -> list[ProbeOutcome]:
        self.rounds += 1
        probes = ResultStore(self.store.table_dir("max_batch"), f"probes-{self.rounds}")
        # A search stopped before its table was written left this round's directory: its rows are not
        # this search's, and Tune would take the directory for an experiment to continue.
        shutil.rmtree(probes.root, ignore_errors=True)
        tuner = trials_tuner(self.options, probes, trials, [ResultTablesCallback(probes)])
        with worker_groups(self.options, probes) as groups:
            groups.prestart(trials[0])
            fit_trials(tuner)
        outcomes = outcomes_of(trials, probes.read("trials").to_pylist())
        print(round_line(self.rounds, trials, outcomes), flush=True)
        return outcomes


def outcomes_of(trials: list[TrialParams], rows: list[dict[str, Any]]) -> list[ProbeOutcome]:
    """Each probe's outcome, found by its parameters; a probe without a row failed."""
    by_params = {row["params_json"]: row for row in rows}
    outcomes = []
    for params in trials:
        row = by_params.get(params.key())
        outcomes.append(
            ProbeOutcome.of_trial_row(row) if row else ProbeOutcome(TrialStatus.FAILED, error="probe left no row")
        )
    return outcomes


def round_line(number: int, trials: list[TrialParams], outcomes: list[ProbeOutcome]) -> str:
    batches = ", ".join(str(t.micro_batch_per_worker) for t in trials)
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status.value] = counts.get(outcome.status.value, 0) + 1
    statuses = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    plural = "s" if len(trials) != 1 else ""
    return f"find-max-batch round {number}: {len(trials)} configuration{plural} at micro batch {batches}: {statuses}"


def edge_line(row: dict[str, Any]) -> str:
    probed = ", ".join(f"{b} {s}" for b, s in zip(row["probed_micro_batches"], row["probe_statuses"]))
    edge = row["max_micro_batch"] if row["max_micro_batch"] is not None else "none"
    return f"  max micro batch {edge} ({row['probes']} probes: {probed}) for {row['configuration']}"


class FitToEdges:
    """``sweep.run_sweep``'s ``fit_batches``: the edges (searched, or read back), then the grid clipped to them."""

    def __init__(self, options: SweepOptions, store: ResultStore, limits: SearchLimits):
        self.options = options
        self.store = store
        self.limits = limits

    def __call__(self, trials: list[TrialParams]) -> tuple[list[TrialParams], list[str]]:
        path = max_batch_path(self.store)
        if path.is_file():
            rows = pq.read_table(path).to_pylist()
            missing = set(configurations(trials)) - {row["configuration"] for row in rows}
            if missing:
                raise UsageError(
                    f"find-max-batch: {path} has no row for configuration {sorted(missing)[0]}; it was written for "
                    "another space: move it away to search again"
                )
            print(f"find-max-batch: using {path} ({len(rows)} configurations); not searching again")
        else:
            rows = find_max_batches(trials, ProbeRounds(self.options, self.store), self.limits)
            atomic_write_table(path, max_batch_table(rows, self.store.sweep))
            print(f"find-max-batch: {len(rows)} configurations searched; table: {path}")
        for row in rows:
            print(edge_line(row))
        return clip_to_edges(trials, rows)
