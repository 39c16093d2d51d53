"""The step-time model against measurement on 16 CPU cores (docs/results/cpu16-prediction)."""

from __future__ import annotations

from . import figure, summary, table


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
            f"{r['step_time_ms']:.1f}",
            f"{r['measured_step_time_ms']:.1f} ({r['measured_min_ms']:.1f}-{r['measured_max_ms']:.1f})",
            "-" if r["measured_comm_ms"] is None else f"{r['measured_comm_ms']:.1f}",
            f"{r['error']:+.1%}",
            r["missed_term"] or "",
        ]
        for r in summary("cpu16-prediction")
    ]
    header = ["run", "scaling", "ranks", "micro batch", "compute (ms)", "comm (ms)", "predicted step (ms)"]
    header += ["measured step, median (range)", "profiled comm (ms)", "error", "term further off"]
    return table(header, body, "llrrrrrrrrl")
