"""Which trial is best: a sweep's metric and its direction (``sweep.json``), and the one rule that picks it.

A sweep that searches or schedules optimises a metric (its space's ``metric`` and ``mode``, or the flags'); a
plain grid with none named ranks by its default, the throughput, as its progress line always has. The best
trial is the completed trial with the best finite value of the metric's column in the trials table; trials
that failed, ran out of memory or were stopped by the scheduler (an early epoch's value, not a final one) are
no candidates. Of equal values the smaller ``trial_id`` wins, so every reader of one table picks one trial.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from raysweep.core.errors import UsageError
from raysweep.core.names import did_you_mean
from raysweep.core.params import TrialParams
from raysweep.core.status import is_completed

MODES = ("min", "max")
# A per-epoch metric a sweep optimises -> the trials table's column holding its last epoch's value.
TRIAL_COLUMNS = {"train_loss": "final_loss"}
# Parameters that never tell a configuration apart in a summary: the fault injection is a test's.
UNSHOWN_PARAMETERS = ("inject_fault",)


@dataclass(frozen=True)
class Ranking:
    """A metric and its direction."""

    metric: str
    mode: str = "max"

    @property
    def column(self) -> str:
        """The trials table's column of the metric."""
        return TRIAL_COLUMNS.get(self.metric, self.metric)

    def order_key(self, value: float) -> float:
        """Sorting ascending by this puts the best first."""
        return -value if self.mode == "max" else value


DEFAULT_RANKING = Ranking("throughput", "max")


def ranking_of(manifest: Mapping[str, Any]) -> Ranking:
    """The sweep's ranking from ``sweep.json``: its recorded metric and mode, else the default (throughput)."""
    metric = manifest.get("metric")
    if not metric:
        return DEFAULT_RANKING
    mode = manifest.get("mode")
    return Ranking(str(metric), mode if mode in MODES else "max")


def searched_of(manifest: Mapping[str, Any]) -> list[str]:
    """The parameters the sweep's searcher drew (``sweep.json``'s search record), in the order recorded."""
    search = manifest.get("search")
    return [str(n) for n in search.get("searched", [])] if isinstance(search, Mapping) else []


def chosen_ranking(
    manifest: Mapping[str, Any], columns: Iterable[str], metric: str | None = None, mode: str | None = None
) -> Ranking:
    """The sweep's ranking, or ``metric`` (a column of the trials table, or a reported metric) and ``mode``
    given instead; a metric other than the sweep's needs its mode."""
    recorded = ranking_of(manifest)
    if metric is None or metric == recorded.metric:
        chosen = Ranking(recorded.metric, mode or recorded.mode)
    elif mode is None:
        raise UsageError(f"best: metric {metric!r} is not the sweep's ({recorded.metric}); give mode='min' or 'max'")
    else:
        chosen = Ranking(metric, mode)
    if chosen.mode not in MODES:
        raise UsageError(f"best: mode must be min or max, got {chosen.mode!r}")
    names = list(columns)
    if chosen.column not in names:
        hint = did_you_mean(chosen.column, names)
        raise UsageError(f"best: metric {chosen.metric!r} is not a column of the trials table{hint}")
    return chosen


def metric_value(row: Mapping[str, Any], column: str) -> float | None:
    """The row's finite number in ``column``, else None."""
    value = row.get(column)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)  # numpy scalars
        except (TypeError, ValueError):
            return None
    value = float(value)
    return value if math.isfinite(value) else None


def is_candidate(row: Mapping[str, Any], ranking: Ranking) -> bool:
    return is_completed(row.get("status")) and metric_value(row, ranking.column) is not None


def ranked(rows: Iterable[Mapping[str, Any]], ranking: Ranking) -> list[Mapping[str, Any]]:
    """The rows best first: candidates by the metric (ties by ``trial_id``), then the others in their order."""
    rows = list(rows)
    candidates = [r for r in rows if is_candidate(r, ranking)]
    candidates.sort(key=lambda r: (ranking.order_key(metric_value(r, ranking.column)), str(r.get("trial_id"))))
    return candidates + [r for r in rows if not is_candidate(r, ranking)]


def varied_parameters(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The trial parameters whose values differ between ``rows``, in field order."""
    rows = list(rows)
    names = [n for n in TrialParams.field_names() if n not in UNSHOWN_PARAMETERS and any(n in r for r in rows)]
    return [n for n in names if len({str(r.get(n)) for r in rows}) > 1]


@dataclass(frozen=True)
class BestTrial:
    """The best trial of a sweep under a ranking: its id, value, parameters that vary or were searched, its row."""

    trial_id: str
    metric: str
    mode: str
    value: float
    params: dict[str, Any] = field(default_factory=dict)
    row: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        """``trial <id> <metric>=<value> (<name>=<value> ...)``."""
        shown = " ".join(f"{k}={show(v)}" for k, v in self.params.items())
        return f"trial {self.trial_id} {self.metric}={show(self.value)}" + (f" ({shown})" if shown else "")


def show(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def best_trial(rows: Iterable[Mapping[str, Any]], ranking: Ranking, searched: Iterable[str] = ()) -> BestTrial | None:
    """The best candidate of ``rows`` (None without one), with the parameters that vary among ``rows`` or
    were searched."""
    rows = list(rows)
    order = ranked(rows, ranking)
    if not order or not is_candidate(order[0], ranking):
        return None
    top = dict(order[0])
    names = [*searched, *(n for n in varied_parameters(rows) if n not in set(searched))]
    return BestTrial(
        trial_id=str(top.get("trial_id")),
        metric=ranking.metric,
        mode=ranking.mode,
        value=metric_value(top, ranking.column),
        params={n: top.get(n) for n in names if n in top},
        row=top,
    )
