"""Optuna in Tune's search slot, released as trials fit: one study per grid point, a fixed budget each.

``FitSearcher`` decides *when* a trial starts (its ranks fit in the free capacity, never more than
``max_concurrent`` at once); this subclass decides *what* it trains: the grid point's template
(its shape, the one planning checked) with the distribution axes Optuna's ``ask`` proposes from the
results so far (``ray.tune.search.optuna.OptunaSearch``, one per grid point, so every grid point
gets the same number of trials and its study learns only from its own).  A study's first trial is its
baseline: every searched parameter at its default, the learning rate at the optimizer's scaling rule
(where that lies in the searched range): the configuration the search has to beat.

Given a ``storage`` (an Optuna RDB URL, the sweep's ``optuna.db``), the studies live there, one per grid
point under ``study_name``'s name, so ``optuna-dashboard`` and ``optuna.load_study`` read them; a resumed
sweep's searchers load the same studies (``load_if_exists``).
"""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
from collections.abc import Callable
from typing import Any

from raysweep.core.params import TrialParams
from raysweep.core.spec import SPEC_KEY, TrialSpec
from raysweep.runtime.capacity import Capacity
from raysweep.runtime.searcher import FitSearcher


def optuna_distributions(axes: dict[str, dict[str, Any]]) -> dict:
    """A space's distribution axes (``{name: {kind: args}}``) as Optuna's distributions."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    out = {}
    for name, spec in axes.items():
        ((kind, args),) = spec.items()
        if kind == "choice":
            out[name] = CategoricalDistribution(list(args))
        elif kind == "randint":  # [low, high), as the grid's sampler draws it
            out[name] = IntDistribution(int(args[0]), int(args[1]) - 1)
        else:
            out[name] = FloatDistribution(float(args[0]), float(args[1]), log=kind == "loguniform")
    return out


def baseline(template: TrialParams, axes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The searched parameters of ``template`` at their defaults (``lr`` 0 is the scaling rule's value), those
    inside their axis's range."""
    defaults = {f.name: f.default for f in dataclasses.fields(TrialParams) if f.name in axes}
    unsearched = dataclasses.replace(template, **defaults)
    point = {name: getattr(unsearched, name) for name in axes}
    if "lr" in point:
        point["lr"] = unsearched.learning_rate
    return {name: value for name, value in point.items() if inside(value, axes[name])}


def inside(value: Any, spec: dict[str, Any]) -> bool:
    ((kind, args),) = spec.items()
    if kind == "choice":
        return value in args
    high_open = kind == "randint"  # [low, high)
    return args[0] <= value < args[1] if high_open else args[0] <= value <= args[1]


def study_name(point: int, template: TrialParams) -> str:
    """``point0-w1-mb16-acc1-repeat0``: the grid point's number, shape and repeat (unique within a sweep)."""
    return f"point{point}-{template.batch_label('-')}-repeat{template.repeat}"


def study(
    axes: dict[str, dict[str, Any]],
    metric: str,
    mode: str,
    seed: int,
    budget: int,
    start: dict[str, Any],
    storage: str | None = None,
    name: str | None = None,
):
    import optuna
    from optuna.samplers import TPESampler
    from ray.tune.search.optuna import OptunaSearch

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # a line per study and trial: the progress line says it

    # TPE models the results once this many random trials have run: half the budget, so it has a say
    sampler = TPESampler(seed=seed, n_startup_trials=max(1, budget // 2))
    return OptunaSearch(
        space=optuna_distributions(axes),
        metric=metric,
        mode=mode,
        sampler=sampler,
        points_to_evaluate=[start] if start else None,
        storage=optuna.storages.RDBStorage(storage) if storage else None,
        study_name=name,
    )


class OptunaFitSearcher(FitSearcher):
    def __init__(
        self,
        templates: list[TrialParams],
        axes: list[dict[str, dict[str, Any]]],
        budget: int,
        metric: str,
        mode: str,
        capacity: Capacity,
        base_spec: TrialSpec,
        max_concurrent: int = 0,
        finished_params: Callable[[], list[str]] = list,
        storage: str | None = None,
    ):
        # trial ``index`` is grid point ``index // budget``'s
        planned = [template for template in templates for _ in range(budget)]
        super().__init__(planned, capacity, base_spec, max_concurrent, finished_params)
        self.budget, self.metric_name = budget, metric
        # template i's study searches axes[i] (its grid's ranges)
        self.studies = [
            study(
                point_axes,
                metric,
                mode,
                seed,
                budget,
                baseline(template, point_axes),
                storage=storage,
                name=study_name(seed, template),
            )
            for seed, (template, point_axes) in enumerate(zip(templates, axes))
        ]
        self.study_of: dict[str, int] = {}

    def suggest(self, trial_id: str) -> dict | str | None:
        released = super().suggest(trial_id)
        if not isinstance(released, dict):
            return released
        spec = released[SPEC_KEY]
        point = spec.index // self.budget
        self.study_of[trial_id] = point
        proposed = self.studies[point].suggest(trial_id)
        return {SPEC_KEY: dataclasses.replace(spec, params=dataclasses.replace(spec.params, **proposed))}

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        value = result.get(self.metric_name)
        if trial_id in self.study_of and isinstance(value, (int, float)) and math.isfinite(value):
            self.studies[self.study_of[trial_id]].on_trial_result(trial_id, result)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        super().on_trial_complete(trial_id, result, error)
        if trial_id in self.study_of:
            self.studies[self.study_of.pop(trial_id)].on_trial_complete(trial_id, result, error)

    def get_state(self) -> dict:
        return {**super().get_state(), "studies": [saved(s) for s in self.studies], "study_of": self.study_of}

    def set_state(self, state: dict) -> None:
        super().set_state(state)
        for searcher, blob in zip(self.studies, state["studies"]):
            restore(searcher, blob)
        self.study_of = state["study_of"]


def saved(searcher) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "study.pkl")
        searcher.save(path)
        with open(path, "rb") as f:
            return f.read()


def restore(searcher, blob: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "study.pkl")
        with open(path, "wb") as f:
            f.write(blob)
        searcher.restore(path)
