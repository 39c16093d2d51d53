"""The committed two-H200 run predicted from its own 1-rank trial.

    PYTHONPATH=. python docs/results/h200x2-strong-scaling/predict.py [--out CSV]


Inputs, all committed here: ``summary.csv``'s ``trials`` rows (each trial's ranks, micro batch, throughput, from
the sweep's trial table; a trial without a throughput did not complete) and ``sweep.json`` (every trial's
parameters); the gradients' element count is the model's (timm, built on the CPU, no weights); the link is the named
NVLink 4 (H200s of one host; ``analysis.prediction.link_model.NAMED_LINKS``). The step time of a trial is its
global batch over its throughput. No overlap measured in these tables: the bounds none and full are both given.
Writes ``summary-prediction.csv`` beside this script (or ``--out``) and prints it.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import pandas as pd

from analysis.prediction.link_model import named_link
from analysis.prediction.predict import predict_from_trials
from trainers.model.models import create_model

HERE = Path(__file__).resolve().parent


def committed_trials() -> pd.DataFrame:
    manifest = json.loads((HERE / "sweep.json").read_text())
    by_workers = {t["num_workers"]: t for t in manifest["trials"]}
    with open(HERE / "summary.csv", newline="") as f:
        table: dict[str, dict[str, float]] = {}
        for row in csv.DictReader(f):
            if row["source"] == "trials":
                table.setdefault(row["record"], {})[row["quantity"]] = float(row["value"])
    rows = []
    for trial in table.values():
        workers = int(trial["num_workers"])
        params = by_workers[workers]
        global_batch = int(params["global_batch"])
        rows.append(
            {
                **params,
                "trial_id": f"w{workers}",
                "status": "completed",  # the table's throughput: a trial that finished
                "micro_batch_per_worker": int(trial["micro_batch_per_worker"]),
                "amp": "autocast",  # bf16 with amp=auto on DeepSpeed: torch autocast over fp32 weights
                "step_time_ms": global_batch / trial["throughput"] * 1000.0,
                "params_json": json.dumps(params),
            }
        )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=HERE / "summary-prediction.csv")
    target = parser.parse_args(argv).out
    trials = committed_trials()
    first = trials.iloc[0]
    model = create_model(first["model"], 10, int(first["image_size"]), int(first["in_chans"]))  # synthetic: 10 classes
    params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    # calibrated on the 1-rank trial alone: the 2-rank run is held out, predicted
    frame = predict_from_trials(
        trials, named_link("nvlink4"), nodes=1, gpus_per_node=2, trainable_params=params, calibrate_on={1}
    )
    strong = frame[frame["scaling"] == "strong"]
    columns = [
        "num_workers",
        "micro_batch",
        "compute_ms",
        "compute_source",
        "comm_ms",
        "step_time_ms",
        "step_time_full_overlap_ms",
        "measured_step_time_ms",
        "error",
        "speedup",
    ]
    out = strong[columns].copy()
    out["measured_speedup"] = out["measured_step_time_ms"].iloc[0] / out["measured_step_time_ms"]
    out.to_csv(target, index=False, float_format="%.4g")
    print(f"trainable parameters: {params:,}")
    print(out.round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
