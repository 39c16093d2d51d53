"""No torch in the sweep's process before Ray starts: the launch, A/B on the 2-core CPU (cpu-launch-imports)."""

from __future__ import annotations

import statistics

from . import figure, span, summary, table

PHASES = (("ray_up_s", "Ray up"), ("planned_s", "planned"), ("first_trial_s", "first trial starts"))
PHASES += (("first_step_s", "its first step"),)


def pairs() -> list[tuple[dict, dict]]:
    rows = summary("cpu-launch-imports")
    return [
        (
            next(r for r in rows if r["pair"] == p and r["arm"] == "base"),
            next(r for r in rows if r["pair"] == p and r["arm"] == "new"),
        )
        for p in sorted({r["pair"] for r in rows})
    ]


@figure("cpu-launch-imports")
def cpu_launch_imports() -> str:
    body = []
    for key, label in PHASES:
        base = [b[key] for b, _ in pairs()]
        new = [n[key] for _, n in pairs()]
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


@figure("cpu-launch-imports-says")
def cpu_launch_imports_says() -> str:
    verdicts = []
    for key, label in PHASES:
        saved = [b[key] - n[key] for b, n in pairs()]
        agree = all(v > 0 for v in saved) or all(v < 0 for v in saved)
        verdicts.append(
            f"{label}: NEW {'earlier' if saved[0] > 0 else 'later'} in every pair"
            if agree
            else f"{label}: NEW earlier in {sum(v > 0 for v in saved)} of {len(saved)} pairs"
        )
    return f"{'; '.join(verdicts)}. No difference is established unless every pair agrees."
