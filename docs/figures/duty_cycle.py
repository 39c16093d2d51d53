"""The sweep economy and the cold-process floor on an H200 (docs/results/h200-duty-cycle)."""

from __future__ import annotations

import json
import statistics

from . import RESULTS, TRIAL_HEADER, count, figure, measures, span, summary, table, trial_cells


@figure("h200-duty-cycle")
def h200_duty_cycle() -> str:
    rows = sorted(summary("h200-duty-cycle"), key=lambda r: r["micro_batch_per_worker"])
    body = [
        [str(r["micro_batch_per_worker"]), *trial_cells(r), f"{r['teardown_s']:.2f}", f"{r['timed_s']:.1f}"]
        for r in rows
    ]
    return table(["micro batch", *TRIAL_HEADER, "teardown (s)", "timed (s)"], body, "rrrrrrrrr")


@figure("h200-duty-cycle-economy")
def h200_duty_cycle_economy() -> str:
    economy = json.loads((RESULTS / "h200-duty-cycle" / "sweep.json").read_text())["economy"]
    rows = summary("h200-duty-cycle")
    setups, teardowns = [r["setup_s"] for r in rows], [r["teardown_s"] for r in rows]
    return (
        f"Sweep wall time {economy['wall_s']:.1f} s; **duty cycle {economy['duty_cycle']:.3f}** (timed GPU-seconds "
        f"over wall time, `sweep.json`'s\n`economy`); median setup {statistics.median(setups):.1f} s "
        f"(range {span(setups, '.1f')}), teardown {span(teardowns, '.1f')} s."
    )


@figure("h200-duty-cycle-floor")
def h200_duty_cycle_floor() -> str:
    floors = [
        {q: v for (src, _, q), v in measures("h200-duty-cycle", "summary-logs.csv").items() if src == run}
        for run in ("floor1", "floor2")
    ]

    def step(after: str, before: str) -> str:
        return span([f[after] - f[before] for f in floors], ".1f")

    return (
        f"first step at {' s and '.join(format(f['first step'], '.1f') for f in floors)} s "
        f"(import torch {' / '.join(format(f['import torch'], '.1f') for f in floors)} s, timm\n"
        f"+{step('import timm', 'cuda context')} s, DeepSpeed +{step('import deepspeed', 'import timm')} s, "
        f"ray.train.torch +{step('import ray.train.torch', 'import deepspeed')} s, `deepspeed.initialize` "
        f"+{step('deepspeed.initialize', 'model on device')} s)"
    )


@figure("h200-duty-cycle-over-floor")
def h200_duty_cycle_over_floor() -> str:
    setup = statistics.median(r["setup_s"] for r in summary("h200-duty-cycle"))
    floors = [v for (_, _, q), v in measures("h200-duty-cycle", "summary-logs.csv").items() if q == "first step"]
    return f"{span([setup - f for f in floors], '.0f')} s"


@figure("h200-duty-cycle-targets")
def h200_duty_cycle_targets() -> str:
    economy = json.loads((RESULTS / "h200-duty-cycle" / "sweep.json").read_text())["economy"]
    rows = summary("h200-duty-cycle")
    setup = statistics.median(r["setup_s"] for r in rows)
    teardowns = [r["teardown_s"] for r in rows]
    met = sum(t <= 1.0 for t in teardowns)  # issue 13's teardown target, 1 s
    slowest = max(rows, key=lambda r: r["teardown_s"])
    return (
        f"setup <= 5 s for later trials (measured: median {setup:.0f} s) and duty cycle >= 0.85\n"
        f"(measured {economy['duty_cycle']:.2f}) are **not met**; teardown <= 1 s is met for {count(met)} of "
        f"{count(len(rows))} trials ({slowest['teardown_s']:.2f} s on micro batch {slowest['micro_batch_per_worker']})"
    )
