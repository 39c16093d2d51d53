"""The step-time model against measurement on 16 CPU cores (docs/results/cpu16-prediction)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from analysis.prediction.predict import worst_by_calibration

from . import figure, summary, table

EXPERIMENT = "cpu16-prediction"


@dataclass(frozen=True)
class Validation:
    """The rows a claim of the predictor's accuracy may rest on, and the worst of them."""

    rows: list[dict]  # the held-out rows where the summary marks them, else every row with an error
    held_out: bool
    worst: dict  # the row of the largest absolute error, misses included

    @property
    def error(self) -> float:
        return abs(self.worst["error"])

    @property
    def step_scales(self) -> tuple[float, float]:
        """What a predicted step is multiplied by to span the measured ones, measured = predicted / (1 + error):
        from the largest over-prediction's scale to the largest under-prediction's (1 where the errors have one
        sign, so the prediction itself is inside)."""
        errors = [r["error"] for r in self.rows]
        return 1 / (1 + max(max(errors), 0.0)), 1 / (1 + min(min(errors), 0.0))


def validation() -> Validation:
    rows = [r for r in summary(EXPERIMENT) if r["error"] is not None]
    held = [r for r in rows if r.get("held_out") is True]
    used = held or rows
    return Validation(used, bool(held), max(used, key=lambda r: abs(r["error"])))


def by_calibration(rows: list[dict]) -> str:
    """Per set of counts the model was calibrated on (the most first): the counts it held out, its worst error."""
    parts = []
    for calibrated_on, held, worst in worst_by_calibration(rows):
        counts = sorted({r["num_workers"] for r in held})
        parts.append(
            f"from {calibrated_on.replace(',', ', ')} ranks, {len(held)} predictions at "
            f"{' and '.join(str(n) for n in counts)} ranks, worst **{worst['error']:+.1%}** ({worst['run']}, "
            f"{worst['scaling']}, {worst['num_workers']} ranks"
            + (f"; {worst['missed_term']}" if worst["missed_term"] else "")
            + ")"
        )
    return "; ".join(parts)


@figure("prediction-validation")
def prediction_validation() -> str:
    v = validation()
    runs = list(dict.fromkeys(r["run"] for r in v.rows))
    which = "held-out " if v.held_out else ""
    return f"{which}predictions of {len(runs)} cases ({', '.join(f'`{r}`' for r in runs)}): " + by_calibration(v.rows)


@figure("cpu16-prediction")
def cpu16_prediction() -> str:
    body = [
        [
            r["run"],
            r["scaling"],
            str(r["num_workers"]),
            str(r["micro_batch"]),
            f"{r['compute_ms']:.1f}",
            f"{r['comm_ms']:.2f}",
            f"{r.get('contention_ms') or 0:.2f}",
            str(r.get("calibrated_on") or 1),
            f"{r['step_time_ms']:.1f}",
            f"{r['measured_step_time_ms']:.1f} ({r['measured_min_ms']:.1f}-{r['measured_max_ms']:.1f})",
            "-" if r["measured_comm_ms"] is None else f"{r['measured_comm_ms']:.1f}",
            f"{r['error']:+.1%}",
            r["missed_term"] or "",
        ]
        for r in summary(EXPERIMENT)
    ]
    header = ["run", "scaling", "ranks", "micro batch", "compute (ms)", "comm (ms)", "contention (ms)"]
    header += ["calibrated on (ranks)", "predicted step (ms)", "measured step, median (range)", "profiled comm (ms)"]
    return table(header + ["error", "term further off"], body, "llrrrrrlrrrrl")


@figure("cpu16-prediction-latest")
def cpu16_prediction_latest() -> str:
    held = [r for r in summary(EXPERIMENT) if r.get("held_out") is True]
    return "Held out, each predicted from the smaller counts only: " + by_calibration(held) + "."


@figure("cpu16-host-sharing")
def cpu16_host_sharing() -> str:
    rows = summary(EXPERIMENT, "host_sharing.csv")
    median = {k: statistics.median(r["step_time_ms"] for r in rows if r["at_once"] == k)
              for k in sorted({r["at_once"] for r in rows})}  # fmt: skip
    alone, most = median[1], max(median)
    at_once = ", ".join(f"x{median[k] / alone:.2f} at {k}" for k in median if k > 1)
    spread = [r["step_time_ms"] / alone for r in rows if r["at_once"] == most]
    return (
        f"step at {at_once} the median step of one alone ({alone:.1f} ms; each of the {most}: "
        f"x{min(spread):.2f}-x{max(spread):.2f}; vit-micro at micro batch 32, "
        "`docs/results/cpu16-prediction/host_sharing.py`)"
    )
