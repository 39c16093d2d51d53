"""k copies of the 1-rank vit-micro trial at once on one host, with no collectives between them: how much of its
compute a rank loses to other ranks merely sharing the host (cores, memory bandwidth, caches), set beside the
contention the multi-rank trials of validate.py show.

    python docs/results/cpu16-prediction/host_sharing.py [--smoke] [OUT]

One sweep per k in 1, 2, 4 and 8 (one CPU a trial, k seeds at once; two one after the other for k = 1), each
trial 60 steps of micro batch 32 of which 5 warm up. Writes ``OUT/host_sharing.csv``: per trial k, its seed,
step time, p95 and when it ran. ``--smoke``: k = 2 alone, at half a CPU a trial and 12 steps, on 2 CPUs: a check
that the script runs against the code, not a measurement.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd

import raysweep

COLUMNS = ["at_once", "seed", "step_time_ms", "step_time_p95_ms", "started_at", "finished_at", "timed_s"]


def trial(steps: int, cpus: float) -> dict:
    return {
        "model": "vit_micro_patch4_32",
        "image_size": 32,
        "dataset": "synthetic",
        "device": "cpu",
        "cpus_per_worker": cpus,
        "engine": "ddp",
        "precision": "fp32",
        "epochs": 1,
        "train_samples": 8192,
        "max_steps_per_epoch": steps,
        "warmup_steps": min(5, steps // 4),
        "checkpoint_every": 0,
        "num_workers": 1,
        "micro_batch_per_worker": 32,
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    smoke = "--smoke" in argv
    argv = [a for a in argv if a != "--smoke"]
    out = Path(argv[0] if argv else os.environ.get("OUT", "/tmp/host-sharing"))
    out.mkdir(parents=True, exist_ok=True)
    fixed = trial(12, 0.5) if smoke else trial(60, 1)
    rows = []
    for k in [2] if smoke else [1, 2, 4, 8]:
        result = raysweep.run_sweep(
            {
                "description": f"{k} trials at once, no collectives",
                "fixed": fixed,
                "axes": {"seed": list(range(max(k, 2)))},
            },
            results_dir=out / "sweeps",
            name=f"at-once-{k}",
            max_concurrent_trials=k,
            dashboard=False,
            report=False,
            progress="quiet",
        )
        rows.append(result.trials.to_pandas().assign(at_once=k)[COLUMNS])
    table = pd.concat(rows, ignore_index=True)
    table.to_csv(out / "host_sharing.csv", index=False)
    print(table.groupby("at_once")["step_time_ms"].median().round(1).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
