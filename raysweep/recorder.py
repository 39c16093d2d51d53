"""Writes the result tables from the sweep's own process, as Tune reports each trial's results.

Trial actors and Train workers may run on other nodes' disks; this callback runs in the
CLI's process, so the tables land where the user asked, whatever the cluster.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timezone
from pathlib import Path

from ray.tune import Callback

from raysweep.errors import is_out_of_memory
from raysweep.params import TrialParams
from raysweep.store import ResultStore


def params_columns(params: TrialParams) -> dict:
    """The trial's configuration as ``trials`` columns (derived values resolved)."""
    return {
        "model": params.model,
        "dataset": params.dataset,
        "image_size": params.image_size,
        "device": params.device,
        "precision": params.precision,
        "amp": params.amp_mode,
        "engine": params.engine,
        "zero_stage": params.zero_stage,
        "optimizer": params.optimizer,
        "lr": params.learning_rate,
        "compile": params.compile,
        "num_workers": params.num_workers,
        "micro_batch_per_worker": params.effective_micro_batch,
        "grad_accum_steps": params.grad_accum_steps,
        "global_batch": params.train_batch_size,
        "placement_strategy": params.placement_strategy,
        "data_scaling": params.data_scaling,
        "slow_ranks": params.slow_ranks,
        "slow_factor": params.slow_factor if params.slow_ranks else 0.0,
        "epochs": params.epochs,
        "params_json": json.dumps(params.to_dict(), sort_keys=True),
    }


def error_summary(text: str) -> str:
    """The last meaningful line of the trial's error file (the exception), or a fallback."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    causes = [line for line in lines if "Error" in line or "Exception" in line]
    return (causes[-1] if causes else lines[-1] if lines else "trial failed without an error message")[:2000]


def error_text(trial) -> str:
    path = Path(trial.error_file) if getattr(trial, "error_file", None) else None
    return path.read_text(errors="replace") if path and path.is_file() else ""


def peak_memory_in(text: str) -> float | None:
    """The peak memory an out-of-memory rank put in its message (trainers.train_loop.out_of_memory)."""
    found = re.findall(r"peak_mem_gib=([0-9.]+)", text)
    return float(found[-1]) if found else None


def rank_rows(result: dict) -> list[dict]:
    ranks = result.get("rank_rows") or {}
    return [ranks[k] for k in sorted(ranks, key=int)]


class ResultTablesCallback(Callback):
    def __init__(self, store: ResultStore):
        self.store = store
        self.started: dict[str, float] = {}
        self.epoch_rows: dict[str, dict[int, dict]] = {}
        self.last_result: dict[str, dict] = {}
        self.statuses: dict[str, str] = {}
        self.completed_before: dict[str, bool] = {}

    def on_trial_start(self, iteration, trials, trial, **info):
        self.started[trial.trial_id] = time.time()

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if "epoch_row" not in result or self.kept(trial.trial_id):
            return
        tid = trial.trial_id
        if tid not in self.epoch_rows:  # a resumed sweep or trial keeps the epochs it already wrote
            earlier = self.store.read_trial_rows("epochs", tid)
            self.epoch_rows[tid] = {row["epoch"]: row for row in earlier}
        rows = self.epoch_rows[tid]
        rows[result["epoch_row"]["epoch"]] = result["epoch_row"]  # a restarted run re-reports an epoch
        self.store.write_rows("epochs", tid, [rows[e] for e in sorted(rows)])
        self.store.write_rows("ranks", tid, rank_rows(result))
        self.last_result[tid] = result

    def on_trial_complete(self, iteration, trials, trial, **info):
        result = self.last_result.get(trial.trial_id)
        if result is None or not result.get("final"):
            self.write_trial(trial, "failed", "trial ended before its last epoch was reported")
        else:
            self.write_trial(trial, "completed", None)

    def on_trial_error(self, iteration, trials, trial, **info):
        text = error_text(trial)
        if is_out_of_memory(text):
            self.write_trial(trial, "oom", error_summary(text), peak_mem_gib=peak_memory_in(text))
        else:
            self.write_trial(trial, "failed", error_summary(text))

    def kept(self, trial_id: str) -> bool:
        """A completed row is final: a resumed sweep may start a trial Tune had not yet saved as done."""
        if trial_id not in self.completed_before:
            self.completed_before[trial_id] = trial_id not in self.statuses and self.store.is_completed(trial_id)
        return self.completed_before[trial_id]

    def write_trial(self, trial, status: str, error: str | None, **extra) -> None:
        tid = trial.trial_id
        if self.kept(tid):
            return
        params = TrialParams.from_dict(trial.config["params"])
        last = self.last_result.get(tid, {})
        measured = dict(last.get("trial_row", {}))
        ranks = rank_rows(last)
        if ranks:
            measured.update(
                node_ids=[r["node"] for r in ranks],
                device_names=[r["device_name"] for r in ranks],
                num_nodes=len({r["node"] for r in ranks}),
                peak_mem_gib=max(r["peak_mem_gib"] for r in ranks),
            )
        started = self.started.get(tid, time.time())
        now = time.time()
        first_step_at, reported_at = measured.pop("first_step_at", None), measured.pop("reported_at", None)
        driver_started_at = measured.pop("trial_started_at", None)
        if first_step_at:
            # from Tune starting the trial to its first step, and from its last report to its end
            measured["setup_s"] = first_step_at - started
            measured["teardown_s"] = now - reported_at
            phases = {"driver_started": driver_started_at - started}
            phases |= {k: v + phases["driver_started"] for k, v in json.loads(measured["setup_breakdown"]).items()}
            measured["setup_breakdown"] = json.dumps({k: round(v, 3) for k, v in phases.items()})
        row = {
            **params_columns(params),
            **measured,
            "status": status,
            "error": error,
            "trial_wall_s": now - started,
            "retries": measured.get("retries", 0),
            "started_at": datetime.fromtimestamp(started, timezone.utc),
            "finished_at": datetime.now(timezone.utc),
            **{k: v for k, v in extra.items() if v is not None},
        }
        self.store.write_rows("trials", tid, [row])
        self.statuses[tid] = status
