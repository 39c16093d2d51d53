"""How a sweep searches: a Tune scheduler that stops poor trials early, and the searcher that picks trials.

A space (or the CLI, or ``run_sweep``) may name::

    metric: val_accuracy          # a per-epoch figure every trial reports (REPORTED_METRICS)
    mode: max                     # min or max
    scheduler: asha               # or {kind: asha, grace_period: 1, reduction_factor: 2, max_epochs: 4}
    search: optuna                # grid (default), random or optuna
    num_samples: 8                # grid: draws of a point's distributions; random: draws; optuna: trials per point

``grid`` is the sweep fixed before the first trial (a list axis is a grid, a distribution is drawn per
trial); ``random`` draws every axis (a list is a uniform choice), ``num_samples`` trials in all;
``optuna`` keeps the list axes a grid and gives each grid point its own Optuna study over the
distribution axes, ``num_samples`` trials each: a fixed budget per grid point.  The scheduler then
compares a trial only with its own study's trials (one scheduler per study; one for the whole sweep
otherwise).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from raysweep.core.errors import UsageError
from raysweep.core.names import did_you_mean, unknown_name
from raysweep.core.schema import REPORTED_METRICS

MODES = ("min", "max")
SEARCH_KEYS = ("metric", "mode", "scheduler", "search")


@dataclass(frozen=True)
class SchedulerConfig:
    """A Tune trial scheduler by name, with its options; epochs are its unit of time."""

    kind: str
    grace_period: int = 1  # epochs every trial runs before it may be stopped
    reduction_factor: int = 2  # asha: the share 1/reduction_factor of trials that go on at each rung
    max_epochs: int | None = None  # asha: the longest a trial runs (default: the trials' epochs)

    def rungs(self, trial_epochs: int) -> list[int]:
        """The epochs after which a trial may be stopped."""
        if self.kind != "asha":
            return list(range(self.grace_period, trial_epochs))
        top = self.max_epochs or trial_epochs
        rungs, rung = [], self.grace_period
        while rung < top:
            rungs.append(rung)
            rung *= self.reduction_factor
        return rungs


@dataclass(frozen=True)
class SearchConfig:
    """What a sweep optimises and how: the metric, its direction, the searcher and an optional scheduler."""

    search: str = "grid"
    metric: str = "val_accuracy"
    mode: str = "max"
    scheduler: SchedulerConfig | None = None
    metric_named: bool = False  # the space or a flag named the metric (a plain grid then ranks by it)

    @property
    def ranking(self) -> tuple[str, str] | None:
        """The metric and mode the sweep ranks its trials by: the searcher's and scheduler's, or a named one;
        None for a plain grid that names none (it ranks by its default, ``raysweep.core.ranking``)."""
        return (self.metric, self.mode) if self.metric_named or not self.plain else None

    @property
    def adaptive(self) -> bool:
        """Trials proposed from the results so far: they are not known before the sweep starts."""
        return self.search == "optuna"

    @property
    def plain(self) -> bool:
        """Today's sweep: a fixed set of trials run to their last epoch."""
        return self.search == "grid" and self.scheduler is None


def build_asha(config: SchedulerConfig, metric: str, mode: str, trial_epochs: int):
    from ray.tune.schedulers import ASHAScheduler

    return ASHAScheduler(
        time_attr="training_iteration",  # one report per epoch: the epochs a trial has run
        metric=metric,
        mode=mode,
        max_t=config.max_epochs or trial_epochs,
        grace_period=config.grace_period,
        reduction_factor=config.reduction_factor,
    )


def build_median(config: SchedulerConfig, metric: str, mode: str, trial_epochs: int):
    from ray.tune.schedulers import MedianStoppingRule

    return MedianStoppingRule(
        time_attr="training_iteration", metric=metric, mode=mode, grace_period=config.grace_period
    )


# name -> builder of the Tune scheduler (imported only where a sweep runs)
SCHEDULERS: dict[str, Callable[[SchedulerConfig, str, str, int], Any]] = {
    "asha": build_asha,
    "median": build_median,
}
# name -> the distribution kinds of an axis the searcher can search (a list axis is always allowed)
SEARCHERS: dict[str, tuple[str, ...]] = {
    "grid": ("uniform", "loguniform", "randint", "choice"),
    "random": ("uniform", "loguniform", "randint", "choice"),
    "optuna": ("uniform", "loguniform", "randint", "choice"),
}
SCHEDULER_OPTIONS = {"kind", "grace_period", "reduction_factor", "max_epochs"}


def scheduler_from(value: Any, where: str) -> SchedulerConfig | None:
    """``scheduler:`` of a space: a name, a mapping with ``kind`` and options, or none."""
    if value in (None, "", "none"):
        return None
    doc = {"kind": value} if isinstance(value, str) else value
    if not isinstance(doc, dict):
        raise UsageError(f"{where}: scheduler must be a name ({', '.join(SCHEDULERS)}) or a mapping with 'kind'")
    unknown = set(doc) - SCHEDULER_OPTIONS
    if unknown:
        option = sorted(unknown)[0]
        raise UsageError(f"{where}: {unknown_name('scheduler option', option, sorted(SCHEDULER_OPTIONS))}")
    kind = doc.get("kind")
    if kind not in SCHEDULERS:
        raise UsageError(f"{where}: {unknown_name('scheduler', kind, SCHEDULERS)}")
    for name in ("grace_period", "reduction_factor", "max_epochs"):
        value = doc.get(name)
        least = 2 if name == "reduction_factor" else 1
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < least):
            raise UsageError(f"{where}: scheduler {name} must be an integer >= {least}, got {value!r}")
    return SchedulerConfig(**doc)


def search_config_from(doc: dict, where: str) -> SearchConfig:
    """The search keys of a space file (``search``, ``metric``, ``mode``, ``scheduler``), checked."""
    config = SearchConfig(scheduler=scheduler_from(doc.get("scheduler"), where))
    return with_choices(config, where, search=doc.get("search"), metric=doc.get("metric"), mode=doc.get("mode"))


def with_choices(
    config: SearchConfig,
    where: str,
    *,
    search: str | None = None,
    metric: str | None = None,
    mode: str | None = None,
    scheduler: str | None = None,
) -> SearchConfig:
    """``config`` with the given choices (the CLI's flags, ``run_sweep``'s keywords) in place, checked."""
    if search is not None:
        if search not in SEARCHERS:
            raise UsageError(f"{where}: {unknown_name('search', search, SEARCHERS)}")
        config = replace(config, search=search)
    if metric is not None:
        if metric not in REPORTED_METRICS:
            raise UsageError(
                f"{where}: metric {metric!r} is not reported by any trial{did_you_mean(metric, REPORTED_METRICS)} "
                f"(per-epoch metrics: {', '.join(REPORTED_METRICS)})"
            )
        config = replace(config, metric=metric, metric_named=True)
    if mode is not None:
        if mode not in MODES:
            raise UsageError(f"{where}: mode must be min or max, got {mode!r}")
        config = replace(config, mode=mode)
    if scheduler is not None:
        config = replace(config, scheduler=scheduler_from(scheduler, where))
    return config


@dataclass(frozen=True)
class AxisKinds:
    """The kinds of a space's axes, as a searcher sees them: lists, and distributions by kind."""

    distributions: dict[str, str] = field(default_factory=dict)  # axis name -> distribution kind
    categorical: dict[str, list] = field(default_factory=dict)  # choice axes -> their values


def check_search(config: SearchConfig, axes: AxisKinds, trial_epochs: list[int], num_samples: int) -> None:
    """What needs the whole space: the searcher can handle its axes, the scheduler fits the trials' epochs."""
    if num_samples < 1:
        raise UsageError(f"num_samples must be at least 1, got {num_samples}")
    handled = SEARCHERS[config.search]
    for name, kind in axes.distributions.items():
        if kind not in handled:
            raise UsageError(f"search {config.search} cannot search axis {name!r} ({kind}); it handles {handled}")
    if config.search == "optuna":
        if not axes.distributions:
            raise UsageError(
                "search optuna needs at least one distribution axis (uniform, loguniform, randint, choice) to search"
            )
        for name, values in axes.categorical.items():
            odd = [v for v in values if not isinstance(v, (bool, int, float, str)) and v is not None]
            if odd:
                raise UsageError(
                    f"search optuna cannot search axis {name!r}: choice values must be numbers or strings, "
                    f"got {odd[0]!r}"
                )
    scheduler = config.scheduler
    if scheduler is None or not trial_epochs:
        return
    shortest = min(trial_epochs)
    if scheduler.grace_period > shortest:
        raise UsageError(
            f"scheduler {scheduler.kind}: grace_period {scheduler.grace_period} is above the trials' epochs "
            f"({shortest}); set epochs higher or the grace period lower"
        )
    if scheduler.max_epochs is not None and scheduler.max_epochs < scheduler.grace_period:
        raise UsageError(
            f"scheduler {scheduler.kind}: max_epochs {scheduler.max_epochs} is below grace_period "
            f"{scheduler.grace_period}"
        )


def build_scheduler(config: SearchConfig, trial_epochs: int, study_size: int):
    """The Tune scheduler of ``config`` (None: Tune's FIFO, every trial to its last epoch): one per study of
    ``study_size`` trials (0: one for the sweep), its state kept beside Tune's experiment for ``--resume``."""
    if config.scheduler is None:
        return None
    from raysweep.runtime.early_stop import StudyScheduler

    make = partial(SCHEDULERS[config.scheduler.kind], config.scheduler, config.metric, config.mode, trial_epochs)
    return StudyScheduler(make, study_size)


def describe(config: SearchConfig, trial_epochs: int, trials: int) -> list[str]:
    """What an adaptive ``--dry-run`` prints: the searcher, the scheduler's rungs and the budget."""
    lines = [f"search: {config.search}, {config.mode}imise {config.metric}"]
    scheduler = config.scheduler
    if scheduler is None:
        lines.append("scheduler: none (every trial runs to its last epoch)")
    else:
        rungs = ", ".join(str(r) for r in scheduler.rungs(trial_epochs)) or "none"
        extra = f", reduction factor {scheduler.reduction_factor}" if scheduler.kind == "asha" else ""
        lines.append(
            f"scheduler: {scheduler.kind}, grace period {scheduler.grace_period}{extra}; may stop a "
            f"trial after epoch {rungs}"
        )
    lines.append(f"budget: {trials} trials, at most {scheduler_max_epochs(config, trial_epochs)} epochs each")
    return lines


def scheduler_max_epochs(config: SearchConfig, trial_epochs: int) -> int:
    if config.scheduler is not None and config.scheduler.max_epochs:
        return min(config.scheduler.max_epochs, trial_epochs)
    return trial_epochs


@dataclass(frozen=True)
class SearchChoices:
    """The search flags of the CLI and keywords of ``run_sweep``; None leaves the space's own value."""

    search: str | None = None
    metric: str | None = None
    mode: str | None = None
    scheduler: str | None = None
    num_samples: int | None = None

    def apply(self, config: SearchConfig, where: str) -> SearchConfig:
        return with_choices(
            config, where, search=self.search, metric=self.metric, mode=self.mode, scheduler=self.scheduler
        )


NO_CHOICES = SearchChoices()


def search_record(config: SearchConfig, grids: list[dict[str, Any]], num_samples: int) -> dict[str, Any]:
    """What ``sweep.json`` keeps of how the sweep searched: the metric and mode it ranks by (null: the default
    ranking), and under ``search`` the searcher, scheduler, budget and each grid's distribution axes."""
    ranking = config.ranking
    distributions = []
    for grid in grids:
        axes = {name: value for name, value in grid.items() if isinstance(value, dict)}
        if axes and axes not in distributions:
            distributions.append(axes)
    searched = list(dict.fromkeys(name for axes in distributions for name in axes))
    return {
        "metric": ranking[0] if ranking else None,
        "mode": ranking[1] if ranking else None,
        "search": {
            "searcher": config.search,
            "scheduler": config.scheduler.kind if config.scheduler else None,
            "num_samples": num_samples,
            "distributions": distributions,
            "searched": searched,
        },
    }
