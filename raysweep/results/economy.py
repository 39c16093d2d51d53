"""How much of a sweep's time its devices spent training: the duty cycle and the trials' setup times.

duty cycle = sum over trials of timed_s x ranks / (wall x devices), where wall runs from the first
trial's start to the last one's end (the sweep's clock) and devices are the GPUs available, or on a
CPU-only cluster the CPUs the trials could use (each rank holding ``cpus_per_worker`` of them).

The same ratio from the sweep's launch (``run_sweep`` called, the command started) adds what comes
before the first trial: Ray's start, planning, and the part of the first trial's workers' start that
overlaps them (they start as soon as Ray is up).  That is the figure a reserved machine pays.
"""

from __future__ import annotations

import statistics
from datetime import datetime
from typing import Any

import pyarrow as pa

# What each duty cycle divides by, in words: sweep.json's economy and the end-of-sweep line carry them.
DEFINITIONS = {
    "duty_cycle": "timed device-seconds (timed_s x ranks, x cpus_per_worker on CPUs, summed over trials) / "
    "((last trial's end - first trial's start) x devices)",
    "duty_cycle_from_launch": "the same timed device-seconds / ((last trial's end - the sweep's launch) x devices); "
    "the launch is the run_sweep call or the command's start, so Ray's start and planning count; null when resumed",
}


def sweep_economy(trials: pa.Table, devices: float, launched_at: datetime | None = None) -> dict[str, Any]:
    """``sweep.json``'s ``economy``: wall_s, duty_cycle, median_setup_s, median_later_setup_s, devices, with
    ``launched_at`` launch_wall_s and duty_cycle_from_launch, and the two duty cycles' ``definitions``."""
    rows = [r for r in trials.to_pylist() if r["started_at"] is not None and r["finished_at"] is not None]
    if not rows or devices <= 0:
        return {"wall_s": None, "duty_cycle": None, "median_setup_s": None, "median_later_setup_s": None,
                "launch_wall_s": None, "duty_cycle_from_launch": None, "devices": devices,
                "definitions": DEFINITIONS}  # fmt: skip
    rows.sort(key=lambda r: r["started_at"])
    end = max(r["finished_at"] for r in rows)
    wall = (end - rows[0]["started_at"]).total_seconds()
    launch_wall = (end - launched_at).total_seconds() if launched_at else None
    # A GPU trial's rank is one device; a CPU trial's rank holds cpus_per_worker of the CPUs counted.
    busy = sum((r["timed_s"] or 0.0) * r["num_workers"] * rank_devices(r) for r in rows)
    setups = [r["setup_s"] for r in rows if r["setup_s"] is not None]
    later = [r["setup_s"] for r in rows[1:] if r["setup_s"] is not None]
    return {
        "wall_s": wall,
        "duty_cycle": busy / (wall * devices) if wall > 0 else None,
        "median_setup_s": statistics.median(setups) if setups else None,
        "median_later_setup_s": statistics.median(later) if later else None,
        "launch_wall_s": launch_wall,
        "duty_cycle_from_launch": busy / (launch_wall * devices) if launch_wall else None,
        "devices": devices,
        "definitions": DEFINITIONS,
    }


def rank_devices(row: dict[str, Any]) -> float:
    return 1.0 if row["device"] == "gpu" else float(row["cpus_per_worker"])


# The end-of-sweep line's short form of DEFINITIONS.
LINE_DEFINITION = "timed device-seconds / (wall x devices)"


def economy_line(economy: dict[str, Any]) -> str:
    """The end-of-sweep summary's part about it, e.g. ``duty cycle 0.41 from the first trial, 0.35 from launch
    (timed device-seconds / (wall x devices)), median setup 4.2 s``; a resumed sweep has no launch figure."""
    parts = []
    if economy["duty_cycle"] is not None:
        from_launch = economy.get("duty_cycle_from_launch")
        launch = f", {from_launch:.2f} from launch" if from_launch is not None else ""
        parts.append(f"duty cycle {economy['duty_cycle']:.2f} from the first trial{launch} ({LINE_DEFINITION})")
    if economy["median_setup_s"] is not None:
        parts.append(f"median setup {economy['median_setup_s']:.1f} s")
    return ", ".join(parts)
