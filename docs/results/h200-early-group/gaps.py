"""Where a sweep's wall time goes besides timed training, trial by trial: `python gaps.py TAG...` (run.sh, GAPS=1).

Reads each sweep's trials table ($RES/TAG/s, /tmp/res/TAG/s by default). Per trial, in seconds on the sweep's
clock: setup (Tune's start to the first step), warm-up steps, timed steps, the rest of the epoch, the time
from training's end to the last report's arrival (validation, the all-reduce probe, the report's way),
teardown, and the pause before the next trial starts.
"""

import glob
import os
import sys

import pandas as pd

res = os.environ.get("RES", "/tmp/res")
cols = ["setup", "warmup", "timed", "epoch_rest", "after_train", "teardown", "next_gap"]
for tag in sys.argv[1:]:
    trials = pd.concat(pd.read_parquet(f) for f in glob.glob(f"{res}/{tag}/s/trials/*.parquet"))
    trials = trials.sort_values("started_at").reset_index(drop=True)
    rows = []
    for i, t in trials.iterrows():
        nxt = trials.started_at.iloc[i + 1] if i + 1 < len(trials) else None
        rows.append(
            {
                "setup": t.setup_s,
                "warmup": t.warmup_s,
                "timed": t.timed_s,
                "epoch_rest": t.train_time_s - t.warmup_s - t.timed_s,
                "after_train": t.trial_wall_s - t.setup_s - t.train_time_s - t.teardown_s,
                "teardown": t.teardown_s,
                "next_gap": (nxt - t.finished_at).total_seconds() if nxt is not None else 0.0,
            }
        )
    table = pd.DataFrame(rows, columns=cols)
    wall = (trials.finished_at.max() - trials.started_at.min()).total_seconds()
    print(f"{tag}: wall {wall:.2f} s, of which (seconds per trial, in start order)")
    print(table.round(3).to_string())
    print("sum", " ".join(f"{c} {table[c].sum():.2f}" for c in cols), f"| all {table.to_numpy().sum():.2f}")
