"""The sweep's best trial beside its baseline, what the sweep searched, and the parameters every table shows.

The best trial is ``raysweep.core.ranking``'s: the completed trial with the best value of the sweep's metric
(``sweep.json``'s ``metric`` and ``mode``; a plain grid naming none ranks by throughput). Its baseline is
what the search had to beat: for a search, the trials of the best trial's configuration with every searched
parameter at its default (``lr`` at the optimizer's scaling rule: each Optuna study's first trial); for a
grid, the grid's first point (``sweep.json``'s first trial). The two are compared under the report's rule
(``analysis.rows.evidence.compare``) over their repeats.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields

import pandas as pd

from analysis.rows.evidence import Verdict, compare
from analysis.rows.groups import NOT_A_DIFFERENCE, configuration_key, plain, trial_params
from analysis.rows.load import SweepData
from raysweep.core.params import LR_RULES, TrialParams, rule_learning_rate
from raysweep.core.ranking import BestTrial, Ranking, best_trial, ranking_of, searched_of, show, varied_parameters

DEFAULTS = {f.name: f.default for f in fields(TrialParams)}
TOLERANCE = 1e-6  # relative: a value written back from a float is its default


@dataclass(frozen=True)
class BestFinding:
    best: BestTrial
    ranking: Ranking
    baseline: pd.DataFrame  # the baseline point's completed trials (empty: none ran to the end)
    baseline_kind: str  # what the baseline is, in words
    verdict: Verdict | None  # the rule, best point over baseline point; None: the best is the baseline point

    def sentence(self) -> str:
        """The best trial, its value and parameters, and how it compares with the baseline under the rule."""
        best, metric = self.best, self.ranking.metric
        shown = ", ".join(f"{k}={show(plain(v))}" for k, v in best.params.items())
        text = f"trial {best.trial_id} has the best {metric} ({self.ranking.mode}): {show(best.value)}"
        text += f" ({shown})" if shown else ""
        if self.baseline.empty:
            return text + f"; no trial at the baseline ({self.baseline_kind}) ran to its end to compare with."
        if self.verdict is None:
            return text + f"; it is the baseline ({self.baseline_kind}) itself."
        values = self.baseline[self.ranking.column].astype(float)
        ids = ", ".join(self.baseline["trial_id"].astype(str))
        base = f"{values.median():.4g}" if len(values) == 1 else f"median {values.median():.4g} over {len(values)}"
        better = "higher" if self.ranking.mode == "max" else "lower"
        return (
            text + f"; the baseline ({self.baseline_kind}: trial {ids}) has {base}; that the best is {better} is "
            f"{self.verdict.sentence()}."
        )


def best_finding(data: SweepData) -> BestFinding | None:
    """The best completed trial and its baseline; None where no completed trial has the metric."""
    ranking, searched = ranking_of(data.manifest), searched_of(data.manifest)
    trials = data.trials
    if ranking.column not in trials.columns:
        return None
    best = best_trial(trials.to_dict("records"), ranking, searched)
    if best is None:
        return None
    row = trials[trials["trial_id"] == best.trial_id].iloc[0]
    point = trials[trials.apply(configuration_key, axis=1) == configuration_key(row)]
    if searched:
        kind = "every searched parameter at its default, lr at the scaling rule"
        base_key = key_without(trial_params(row), searched)
        same = trials.apply(lambda r: key_without(trial_params(r), searched) == base_key, axis=1)
        baseline = trials[same & trials.apply(lambda r: at_defaults(r, searched), axis=1)]
    else:
        kind = "the grid's first point"
        baseline = first_point(data)
    baseline = baseline[baseline[ranking.column].notna()]
    if baseline.empty or set(baseline["trial_id"]) <= set(point["trial_id"]):
        return BestFinding(best, ranking, baseline, kind, None)
    ours, theirs = point[ranking.column].astype(float), baseline[ranking.column].astype(float)
    verdict = compare(ours, theirs) if ranking.mode == "max" else compare(theirs, ours)
    return BestFinding(best, ranking, baseline, kind, verdict)


def key_without(params: dict, names: list[str]) -> str:
    dropped = {*NOT_A_DIFFERENCE, *names}
    return json.dumps({k: v for k, v in params.items() if k not in dropped}, sort_keys=True, default=str)


def at_defaults(row: pd.Series, names: list[str]) -> bool:
    """Every parameter of ``names`` at its default in ``row`` (``lr``: the scaling rule's value at its batch)."""
    for name in names:
        value = plain(row.get(name))
        if name == "lr":
            optimizer = row.get("optimizer")
            if optimizer not in LR_RULES or value is None or pd.isna(row.get("global_batch")):
                return False
            expected = rule_learning_rate(str(optimizer), float(row["global_batch"]))
        else:
            expected = DEFAULTS.get(name)
        if isinstance(expected, (int, float)) and isinstance(value, (int, float)):
            if not math.isclose(float(value), float(expected), rel_tol=TOLERANCE):
                return False
        elif str(value) != str(expected):
            return False
    return True


def first_point(data: SweepData) -> pd.DataFrame:
    """The completed trials of the grid's first point: ``sweep.json``'s first trial (empty without one)."""
    planned = data.manifest.get("trials")
    if not isinstance(planned, list) or not planned or not isinstance(planned[0], dict):
        return data.trials.iloc[:0]
    first = json.dumps(
        {k: plain(v) for k, v in planned[0].items() if k not in NOT_A_DIFFERENCE}, sort_keys=True, default=str
    )
    return data.trials[data.trials.apply(configuration_key, axis=1) == first]


def search_sentence(manifest: dict) -> str:
    """What the sweep searched: the searcher, the scheduler, the metric and mode, the searched distributions."""
    search = manifest.get("search")
    if not isinstance(search, dict):
        return ""
    searcher, samples = search.get("searcher"), search.get("num_samples")
    distributions = [d for d in search.get("distributions") or [] if isinstance(d, dict)]
    parts = []
    if searcher == "optuna":
        parts.append(f"an Optuna search (TPE, a study of {samples} trial(s) per grid point and repeat)")
    elif searcher == "random":
        parts.append(f"a random search ({samples} trial(s))")
    elif distributions:
        parts.append("a grid whose distribution axes are drawn per trial")
    if search.get("scheduler"):
        parts.append(f"the {search['scheduler']} scheduler stopping poor trials early")
    if manifest.get("metric"):
        parts.append(f"{manifest.get('mode') or 'max'}imising {manifest['metric']}")
    if distributions:
        ranges: dict[str, list[str]] = {}
        for axes in distributions:
            for name, spec in axes.items():
                ((kind, args),) = spec.items()
                ranges.setdefault(name, [])
                text = f"{kind} {list(args)}"
                if text not in ranges[name]:
                    ranges[name].append(text)
        parts.append("over " + ", ".join(f"{name} {' or '.join(texts)}" for name, texts in ranges.items()))
    return f"Searched by {'; '.join(parts)}." if parts else ""


def parameter_names(data: SweepData) -> list[str]:
    """The parameters the sweep searched or varied among its completed trials (the seed and repeat aside)."""
    searched = searched_of(data.manifest)
    varied = [n for n in varied_parameters(data.trials.to_dict("records")) if n not in {"seed", "repeat"}]
    return [n for n in [*searched, *(v for v in varied if v not in searched)] if n in data.trials.columns]


def with_parameters(frame: pd.DataFrame, data: SweepData, after: str = "trial_id") -> pd.DataFrame:
    """``frame`` (one row per trial) with every searched or varied parameter it lacks, placed after ``after``."""
    missing = [n for n in parameter_names(data) if n not in frame.columns]
    if not missing or "trial_id" not in frame.columns:
        return frame
    joined = frame.merge(data.trials[["trial_id", *missing]], on="trial_id", how="left")
    at = list(frame.columns).index(after) + 1
    order = [*frame.columns[:at], *missing, *frame.columns[at:]]
    return joined[order]
