"""The summary of a sweep's trials the CLI prints at its end and a notebook shows (``SweepResult``): one row per
trial, the parameters the sweep varied or searched, then what each trial measured; no Ray."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from raysweep.core.ranking import BestTrial, best_trial, ranked, ranking_of, searched_of, varied_parameters

# Beside the columns a sweep varies, every summary shows what each trial measured.
SUMMARY_MEASURES = ["throughput", "step_time_ms", "peak_mem_gib", "val_accuracy", "setup_s"]


def varied_columns(table: pa.Table) -> list[str]:
    """The trial parameters that differ between this sweep's trials (resolved values), in field order."""
    return varied_parameters(table.to_pylist()) or ["num_workers", "micro_batch_per_worker"]


@dataclass(frozen=True)
class TrialSummary:
    columns: list[str]
    rows: list[list[str]]  # each value formatted (floats to 4 significant digits)
    best: BestTrial | None
    metric: str  # what ``best`` ranks by


def summarize_trials(trials: pa.Table, manifest: Mapping[str, Any]) -> TrialSummary:
    """The trials (best first by the sweep's metric, ``raysweep.core.ranking``, where it names one; else in the
    order of their workers and micro batch) with the searched and varied parameters and the measures."""
    table = trials.sort_by([("num_workers", "ascending"), ("micro_batch_per_worker", "ascending")])
    ranking, searched = ranking_of(manifest), searched_of(manifest)
    shown = [*searched, *(c for c in varied_columns(table) if c not in searched)]
    measures = [*SUMMARY_MEASURES, *([ranking.column] if ranking.column not in SUMMARY_MEASURES else [])]
    columns = [c for c in ["trial_id", "status", *shown, *measures] if c in table.column_names]
    records = table.to_pylist()
    ordered = ranked(records, ranking) if manifest.get("metric") else records
    rows = [[f"{r[c]:.4g}" if isinstance(r[c], float) else str(r[c]) for c in columns] for r in ordered]
    return TrialSummary(columns, rows, best_trial(records, ranking, searched), ranking.metric)
