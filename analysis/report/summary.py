"""summary.json: the headline numbers, groups, knees, recommendation and fits, as plain JSON values."""

from __future__ import annotations

from typing import Any

from analysis.metrics.compute import SweepAnalysis
from analysis.metrics.scaling import AmdahlFit, ScalingResult
from analysis.report.best import best_finding
from analysis.report.findings import headlines
from analysis.report.plots import Plots
from analysis.report.setup import measured_setup
from analysis.rows.evidence import RULE
from analysis.rows.groups import plain


def build_summary(analysis: SweepAnalysis, plots: Plots) -> dict[str, Any]:
    data = analysis.data
    setup = measured_setup(data)
    best_strong, best_batch = analysis.best_strong(), analysis.best_batch()
    reached = analysis.per_trial["time_to_accuracy_s"].notna()
    best = best_finding(data)
    return {
        "sweep": data.name,
        "sweep_dir": str(data.sweep_dir),
        "completed_trials": len(data.trials),
        "left_out": data.left_out,
        "economy": data.manifest.get("economy"),  # sweep.json's: duty cycle and setup times (None without one)
        "measured": {fact.name: fact.value for fact in setup.facts},
        "not_recorded": setup.missing,
        "headlines": headlines(analysis),
        "rule": RULE,
        "comparisons": {
            "count": analysis.family.size,
            "established": sum(v.established for v in analysis.family.verdicts),
            "established_after_holm": sum(analysis.family.holds(v) for v in analysis.family.verdicts),
        },
        "groups": [
            {
                "id": g.id,
                "kind": g.comparison.kind,
                "swept": g.comparison.swept,
                "key": {k: plain(v) for k, v in g.key.items()},
                "swept_values": g.swept_values,
                "trials": g.trial_ids,
                "points": g.points,
                "too_few_points": not g.comparable,
            }
            for groups in analysis.groups.values()
            for g in groups
        ],
        "strong_scaling": [
            {**scaling_at_max(r, "speedup", "efficiency"), "amdahl_fit": amdahl(r.amdahl)} for r in analysis.strong
        ],
        "weak_scaling": [
            {
                **scaling_at_max(r, "efficiency", "scaled_speedup"),
                "gustafson_alpha": r.gustafson_alpha,
                "gustafson_fit": None
                if r.gustafson is None
                else {
                    "alpha": r.gustafson.alpha,
                    "rms_residual": plain(r.gustafson.rms_residual),
                    "points": r.gustafson.points,
                    "degrees_of_freedom": r.gustafson.degrees_of_freedom,
                },
            }
            for r in analysis.weak
        ],
        "batch": [
            {
                "group": r.group.id,
                "knee_micro_batch": whole(r.knee.micro_batch_per_worker),
                "knee_global_batch": whole(r.knee.global_batch),
                "knee_throughput_per_worker": plain(r.knee.throughput_per_worker),
                "peak_micro_batch": whole(r.peak.micro_batch_per_worker),
                "peak_throughput_per_worker": plain(r.peak.throughput_per_worker),
                "recommendation": r.recommendation,
            }
            for r in analysis.batch
        ],
        "amdahl_fit": {"group": best_strong.group.id, **amdahl(best_strong.amdahl)}
        if best_strong and best_strong.amdahl
        else None,
        "knee": {
            "group": best_batch.group.id,
            "micro_batch": whole(best_batch.knee.micro_batch_per_worker),
            "global_batch": whole(best_batch.knee.global_batch),
        }
        if best_batch
        else None,
        "recommendation": best_batch.recommendation if best_batch else None,
        "best_trial": None
        if best is None
        else {
            "trial_id": best.best.trial_id,
            "metric": best.ranking.metric,
            "mode": best.ranking.mode,
            "value": plain(best.best.value),
            "params": {k: plain(v) for k, v in best.best.params.items()},
            "baseline_trials": [str(t) for t in best.baseline["trial_id"]],
            "better_than_baseline": None if best.verdict is None else best.verdict.sentence(),
        },
        "time_to_accuracy": {
            "target": analysis.target,
            "target_source": analysis.target_source,
            "reached": int(reached.sum()),
            "not_reached": int((~reached).sum()),
        },
        "plots": {"made": sorted(p.name for p in plots.made.values()), "skipped": plots.skipped},
    }


def whole(value: Any) -> int | None:
    """Counts and batch sizes come out of averaged rows as floats; JSON readers expect integers."""
    value = plain(value)
    return None if value is None else int(value)


def scaling_at_max(result: ScalingResult, *metrics: str) -> dict[str, Any]:
    top = result.at_max_workers()
    return {
        "group": result.group.id,
        "base_workers": result.base_workers,
        "max_workers": whole(top.num_workers),
        **{f"{m}_at_max": plain(top[m]) for m in metrics},
    }


def amdahl(fit: AmdahlFit | None) -> dict[str, Any] | None:
    if fit is None:
        return None
    return {
        "serial_fraction": plain(fit.serial_fraction),
        "t1_s": plain(fit.t1_s),
        "rms_residual_s": plain(fit.rms_residual_s),
        "points": fit.points,
        "degrees_of_freedom": fit.degrees_of_freedom,
        "max_speedup": plain(fit.max_speedup),
    }
