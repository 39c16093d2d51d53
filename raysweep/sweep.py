"""Runs a planned sweep on Ray: start or join the cluster, hand trials to Tune, summarise."""

from __future__ import annotations

import argparse
import platform
import sys
import time

import ray
from ray import tune

from raysweep import cluster
from raysweep.cluster import DRIVER_CPU, Capacity
from raysweep.params import TrialParams
from raysweep.plan import format_table, plan_trials, trial_table
from raysweep.recorder import ResultTablesCallback
from raysweep.scheduler import FitScheduler
from raysweep.space import SearchSpace
from raysweep.store import ResultStore


def run_sweep(
    args: argparse.Namespace,
    argv: list[str] | None,
    space: SearchSpace,
    sweep: str,
    store: ResultStore,
    trials: list[TrialParams] | None,
    notes: list[str],
) -> int:
    from raysweep.driver import train_driver_fn

    if args.address:
        cluster.join(args.address)
        trials, notes = plan_trials(space, Capacity.of_cluster())
    else:
        cluster.start_local(cluster.local_num_cpus(trials), args.dashboard_host, dashboard=not args.no_dashboard)
    try:
        url = cluster.dashboard_url()
        print(f"Ray dashboard: {url}" if url else "Ray dashboard: not available on this cluster")
        for note in notes:
            print(note)
        print(trial_table(trials))
        store.write_sweep_json(
            {
                "sweep": sweep,
                "space": space.name,
                "description": space.description,
                "argv": sys.argv[:1] + list(argv if argv is not None else sys.argv[1:]),
                "versions": versions(),
                "cluster": {"address": args.address or "local", "resources": ray.cluster_resources()},
                "trials": [t.to_dict() for t in trials],
                "notes": notes,
                "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
        )
        recorder = ResultTablesCallback(store)
        scheduler = FitScheduler(
            trials,
            Capacity.of_cluster(),
            base_config={
                "sweep": sweep,
                "storage_path": str((store.root / "_ray").resolve()),
                "collective_timeout_s": args.collective_timeout,
                "max_failures": args.max_failures,
            },
            max_concurrent=args.max_concurrent_trials,
        )
        tuner = tune.Tuner(
            tune.with_resources(train_driver_fn, {"cpu": DRIVER_CPU}),
            tune_config=tune.TuneConfig(
                search_alg=scheduler,
                num_samples=len(trials),
                reuse_actors=False,
                trial_dirname_creator=lambda trial: trial.trial_id,
            ),
            run_config=tune.RunConfig(
                name="_tune",
                storage_path=str(store.root.resolve()),
                callbacks=[recorder],
                verbose=1,
            ),
        )
        started = time.time()
        tuner.fit()
        print_summary(store, time.time() - started)
        if not args.no_report:
            print_report(store)
    finally:
        ray.shutdown()
    failed = [t for t, s in recorder.statuses.items() if s != "completed"]
    return 1 if failed else 0


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("ray", "deepspeed", "torch", "timm", "pyarrow"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "missing"
    return out


def print_summary(store: ResultStore, elapsed: float) -> None:
    table = store.read("trials").sort_by([("num_workers", "ascending"), ("micro_batch_per_worker", "ascending")])
    columns = [
        "trial_id",
        "status",
        "num_workers",
        "micro_batch_per_worker",
        "global_batch",
        "throughput",
        "step_time_ms",
        "peak_mem_gib",
        "val_accuracy",
        "setup_s",
    ]
    rows = []
    for r in table.select(columns).to_pylist():
        rows.append([f"{v:.4g}" if isinstance(v, float) else str(v) for v in r.values()])
    print()
    print(format_table(columns, rows))
    print(f"\n{table.num_rows} trials in {elapsed:.0f} s; results: {store.root}")
    print(f"  query: duckdb -c \"SELECT * FROM read_parquet('{store.root}/trials/*.parquet')\"")


def print_report(store: ResultStore) -> None:
    try:
        from analysis import analyze
    except ImportError:
        return
    try:
        path = analyze(store.root)
    except Exception as e:  # the sweep's tables are written already; a report problem must not hide them
        print(f"report not written: {e}")
        return
    print(f"report: {path}")
