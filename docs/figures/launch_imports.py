"""Launch A/Bs of ``launch-torch-import/measure.py``, on the CPU and one H100: no torch in the sweep's process
before Ray starts (launch-torch-import), and a rank's imports started as its process starts (tried-rank-import)."""

from __future__ import annotations

import statistics

from . import figure, span, summary, table

PHASES = (
    ("ray_up_s", "Ray up"),
    ("planned_s", "planned"),
    ("first_trial_s", "first trial starts"),
    ("first_step_s", "its first step"),
    ("rank_s", "first trial's start to its first step"),  # the rank's own seconds: what an in-rank change moves
)
# figure name: (experiment, the run's summary)
RUNS = {
    "launch-torch-import-cpu": ("launch-torch-import", "summary.csv"),
    "launch-torch-import-h100": ("launch-torch-import", "summary-h100.csv"),
    "tried-rank-import-cpu": ("tried-rank-import", "summary-cpu.csv"),
    "tried-rank-import-h100": ("tried-rank-import", "summary-h100.csv"),
}


def pairs(run: tuple[str, str]) -> list[tuple[dict, dict]]:
    rows = [{**r, "rank_s": r["first_step_s"] - r["first_trial_s"]} for r in summary(*run)]
    return [
        (
            next(r for r in rows if r["pair"] == p and r["arm"] == "base"),
            next(r for r in rows if r["pair"] == p and r["arm"] == "new"),
        )
        for p in sorted({r["pair"] for r in rows})
    ]


def phases_table(run: tuple[str, str]) -> str:
    body, arms = [], pairs(run)
    for key, label in PHASES:
        base = [b[key] for b, _ in arms]
        new = [n[key] for _, n in arms]
        saved = [b - n for b, n in zip(base, new)]
        body.append(
            [
                label,
                f"{statistics.median(base):.2f} ({span(base, '.2f')})",
                f"{statistics.median(new):.2f} ({span(new, '.2f')})",
                ", ".join(f"{v:+.2f}" for v in saved),
            ]
        )
    header = [
        "seconds from the command's start (the last row: from the first trial's start)",
        "BASE, median (range)",
        "NEW, median (range)",
        "BASE - NEW, each pair",
    ]
    return table(header, body, "lrrr")


def verdict(run: tuple[str, str]) -> str:
    """Per phase, in how many pairs NEW came earlier; a difference is claimed only where every pair agrees and
    the two arms' ranges do not overlap (the difference exceeds the spread)."""
    parts, established, arms = [], [], pairs(run)
    for key, label in PHASES:
        base, new = [b[key] for b, _ in arms], [n[key] for _, n in arms]
        earlier = sum(b > n for b, n in zip(base, new))
        parts.append(f"{label} {earlier} of {len(base)}")
        if earlier in (0, len(base)) and (min(base) > max(new) or min(new) > max(base)):
            established.append(label)
    said = f"established for {', '.join(established)}" if established else "established for no phase"
    return f"NEW earlier in: {'; '.join(parts)} pairs. A difference beyond both arms' spread: {said}."


for name, run in RUNS.items():
    figure(name)(lambda run=run: phases_table(run))
    figure(f"{name}-says")(lambda run=run: verdict(run))
