"""The committed two-H200 run predicted from its own 1-rank trial.

    PYTHONPATH=. python docs/results/h200x2-strong-scaling/predict.py


Inputs, all committed here: ``trials.txt`` (each trial's ranks, micro batch, throughput) and ``sweep.json`` (every
trial's parameters); the gradients' element count is the model's (timm, built on the CPU, no weights); the link is
the named NVLink 4 (H200s of one host; ``analysis.link_model.NAMED_LINKS``). The step time of a trial is its
global batch over its throughput. No overlap measured in these tables: the bounds none and full are both given.
Writes ``prediction.csv`` beside this script and prints it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from analysis.link_model import named_link
from analysis.predict import predict_from_trials
from trainers.models import create_model

HERE = Path(__file__).resolve().parent


def committed_trials() -> pd.DataFrame:
    manifest = json.loads((HERE / "sweep.json").read_text())
    by_workers = {t["num_workers"]: t for t in manifest["trials"]}
    rows = []
    for line in (HERE / "trials.txt").read_text().splitlines()[1:]:
        _, workers, micro, status, throughput = re.split(r"\s+", line.strip())[:5]
        params = by_workers[int(workers)]
        global_batch = int(params["global_batch"])
        rows.append(
            {
                **params,
                "trial_id": f"w{workers}",
                "status": status,
                "micro_batch_per_worker": int(micro),
                "amp": "autocast",  # bf16 with amp=auto on DeepSpeed: torch autocast over fp32 weights
                "step_time_ms": global_batch / float(throughput) * 1000.0,
                "params_json": json.dumps(params),
            }
        )
    return pd.DataFrame(rows)


def main() -> int:
    trials = committed_trials()
    first = trials.iloc[0]
    model = create_model(first["model"], 10, int(first["image_size"]), int(first["in_chans"]))  # synthetic: 10 classes
    params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    frame = predict_from_trials(trials, named_link("nvlink4"), nodes=1, gpus_per_node=2, trainable_params=params)
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
    out.to_csv(HERE / "prediction.csv", index=False, float_format="%.4g")
    print(f"trainable parameters: {params:,}")
    print(out.round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
