"""No torch in the sweep's process before Ray starts: the launch, A/B on the CPU and one H100 (launch-torch-import)."""

from __future__ import annotations

import statistics

from . import figure, span, summary, table

PHASES = (
    ("ray_up_s", "Ray up"),
    ("planned_s", "planned"),
    ("first_trial_s", "first trial starts"),
    ("first_step_s", "its first step"),
)
RUNS = {"cpu": "summary.csv", "h100": "summary-h100.csv"}  # figure suffix: the run's summary


def pairs(name: str) -> list[tuple[dict, dict]]:
    rows = summary("launch-torch-import", name)
    return [
        (
            next(r for r in rows if r["pair"] == p and r["arm"] == "base"),
            next(r for r in rows if r["pair"] == p and r["arm"] == "new"),
        )
        for p in sorted({r["pair"] for r in rows})
    ]


def phases_table(name: str) -> str:
    body, arms = [], pairs(name)
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
        "seconds from the command's start",
        "BASE, median (range)",
        "NEW, median (range)",
        "BASE - NEW, each pair",
    ]
    return table(header, body, "lrrr")


def verdict(name: str) -> str:
    """Per phase, in how many pairs NEW came earlier; a difference is claimed only where every pair agrees and
    the two arms' ranges do not overlap (the difference exceeds the spread)."""
    parts, established, arms = [], [], pairs(name)
    for key, label in PHASES:
        base, new = [b[key] for b, _ in arms], [n[key] for _, n in arms]
        earlier = sum(b > n for b, n in zip(base, new))
        parts.append(f"{label} {earlier} of {len(base)}")
        if earlier in (0, len(base)) and (min(base) > max(new) or min(new) > max(base)):
            established.append(label)
    said = f"established for {', '.join(established)}" if established else "established for no phase"
    return f"NEW earlier in: {'; '.join(parts)} pairs. A difference beyond both arms' spread: {said}."


for suffix, name in RUNS.items():
    figure(f"launch-torch-import-{suffix}")(lambda name=name: phases_table(name))
    figure(f"launch-torch-import-{suffix}-says")(lambda name=name: verdict(name))
