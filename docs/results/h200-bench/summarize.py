"""Writes summary.csv, one row per compared batch of this experiment's two bench runs, from their bench.json.

    PYTHONPATH=. python docs/results/h200-bench/summarize.py

The two bench.json have left the tree; git history keeps them, so a rerun reads a restored copy:
``git archive d39067f docs/results/h200-bench | tar -x -C /tmp/x``, then this script from there.

These runs predate the bench's ``utilisation`` block, so each row's ``flops_per_sample`` and ``peak_flops``
are what a trial of the run's model would have put in its own columns (``trainers.measure.flops``: the analytic
count of the model as a trial builds it, synthetic data's 10 classes; the device's bf16 spec peak), and
``mfu`` is the trials' formula over them. A run of today's bench carries them and they are taken as they are.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = {"compile": HERE / "bench.json", "cifar": HERE / "bench-cifar.json"}
COLUMNS = [
    "run", "date", "device", "model", "batch", "compile", "plain_img_s", "stack_img_s", "ratio", "stack_warmup_s",
    "flops_per_sample", "peak_flops", "mfu", "matmul_ceiling_tflops", "matmul_ceiling_share",
    "pipeline_img_s", "cifar_img_s", "cifar_over_synthetic", "data_wait_fraction",
]  # fmt: skip
PIPELINE = ("pipeline_img_s", "cifar_img_s", "cifar_over_synthetic", "data_wait_fraction")


def trial_compute_rate(model_name: str, device: str) -> tuple[float, float]:
    from trainers.measure.flops import peak_flops, training_flops_per_sample
    from trainers.model.models import create_model

    return training_flops_per_sample(create_model(model_name, num_classes=10)), peak_flops(device, "bf16")


def rows(run: str, bench: dict) -> list[dict]:
    ceiling = bench.get("utilisation", {}).get("matmul_ceiling_tflops") or bench["peak_bf16_tflops"]
    out = []
    for row in bench["rows"]:
        flops, peak = row.get("flops_per_sample"), row.get("peak_flops")
        if flops is None:
            flops, peak = trial_compute_rate(bench["model"], bench["device"])
        achieved = row["stack_img_s"] * flops
        # the run's CIFAR-10 files through the full stack, on the row of its batch (--batches 256)
        pipeline = bench.get("input_pipeline") or {}
        ran = pipeline.get("batch") == row["batch"] and not row["compile"]
        cifar = {k: pipeline[k] for k in PIPELINE} if ran else {}
        out.append(
            {
                **{k: bench[k] for k in ("date", "device", "model")},
                **{k: row[k] for k in COLUMNS if k in row and k != "mfu"},
                "run": run,
                "flops_per_sample": flops,
                "peak_flops": peak,
                "mfu": achieved / peak,
                "matmul_ceiling_tflops": ceiling,
                "matmul_ceiling_share": achieved / (ceiling * 1e12),
                **cifar,
            }
        )
    return out


def main() -> None:
    table = [r for run, path in RUNS.items() for r in rows(run, json.loads(path.read_text()))]
    with open(HERE / "summary.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(table)


if __name__ == "__main__":
    main()
