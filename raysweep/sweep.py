"""Runs a planned sweep on Ray: start or join the cluster, hand trials to Tune, summarise."""

from __future__ import annotations

import os
import platform
import shlex
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import ray
from ray import tune
from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback

import raysweep.interrupt as interrupt
from raysweep.core.params import TrialParams
from raysweep.core.paths import shell_path
from raysweep.core.ranking import ranking_of
from raysweep.core.schema import raysweep_version
from raysweep.core.spec import TrialSpec
from raysweep.core.store import ResultStore
from raysweep.data_stop import DataErrorStop
from raysweep.options import SweepOptions
from raysweep.planning.plan import first_trial, plan_trials, trial_table
from raysweep.planning.search_config import SearchConfig, build_scheduler, search_record
from raysweep.planning.space import SearchSpace
from raysweep.progress import ProgressCallback
from raysweep.results.economy import economy_line, sweep_economy
from raysweep.results.recorder import ResultTablesCallback
from raysweep.results.summary_table import summarize_trials
from raysweep.results.text_table import format_table
from raysweep.runtime import cluster
from raysweep.runtime.caches.bytecode_cache import bytecode_cache
from raysweep.runtime.caches.compile_cache import compile_cache_env
from raysweep.runtime.capacity import DRIVER_CPU, Capacity, local_num_cpus
from raysweep.runtime.early_stop import early_stop_env
from raysweep.runtime.optuna_searcher import OptunaFitSearcher
from raysweep.runtime.ray_logs import logs_location, plain_log_output, quiet_forwarded_logs, slow_step_warnings_to_file
from raysweep.runtime.searcher import FitSearcher
from raysweep.runtime.train_run import import_train_torch_in_background
from raysweep.runtime.worker_groups import WorkerGroups, group_pool
from raysweep.watch.sweep_metrics import SweepMetrics, watch_hints
from raysweep.watch.tensorboard_logger import TensorBoardCallback
from raysweep.watch.trackers import attach_report, tracker_callbacks


def run_sweep(
    options: SweepOptions,
    space: SearchSpace,
    sweep: str,
    store: ResultStore,
    static: list[TrialParams],
    launched_at: datetime,
    fit_batches: FitBatches | None = None,
) -> Path | None:
    """Start or join the cluster, plan the trials for it, run them; the report's path, if one was written.

    ``static``: the space's trials, their values checked (they size a local Ray). The first trial's
    worker group starts as soon as Ray is up, so that its processes' start (imports, placement group,
    process group: most of a first trial's setup) overlaps planning, whose checks of models, datasets
    and files import torch and timm; a trial they refuse raises ``UsageError`` before ``sweep.json`` is
    written (``api.run_planned`` then removes the directories it made). ``fit_batches``
    (``--find-max-batch``) runs on the connected cluster after planning and returns the trials to run
    instead, with notes; the first group then starts after its search.
    """
    with bytecode_cache() as bytecode:
        try:
            import_train_torch_in_background()
            connect(options, options.address, static, {**bytecode, **compile_cache_env(sweep)})
            if options.probe_links:  # before any worker group holds the cluster's CPUs or GPUs
                from raysweep.probe import probe_sweep_links  # imports torch: kept off the launch's path

                probe_sweep_links(store)
            with worker_groups(options, store) as groups:
                trials, notes = plan_on_cluster(options, space, groups, fit_batches)
                if options.progress != "quiet":
                    for line in [*notes, trial_table(trials), *watch_hints(store.root)]:
                        print(line)
                total = planned_total(space, trials)
                store.write_sweep_json(sweep_manifest(options, space, store, trials, notes, total))
                recorder = ResultTablesCallback(store)
                callbacks = [recorder, DataErrorStop(store, recorder), *watch_callbacks(options, sweep, store, total)]
                started = time.time()
                fit_trials(trials_tuner(options, store, trials, callbacks, space), store)
            report = summarise(store, options, time.time() - started, launched_at)
            attach_report(callbacks, report)
            return report
        finally:
            cluster.shutdown()


def plan_on_cluster(
    options: SweepOptions, space: SearchSpace, groups: WorkerGroups, fit_batches: FitBatches | None
) -> tuple[list[TrialParams], list[str]]:
    """The trials to run and notes, for the connected cluster; the first trial's group starts first."""
    capacity = Capacity.of_cluster()
    if fit_batches is None:
        groups.prestart(first_trial(space, capacity))
    trials, notes = plan_trials(space, capacity, local_files=not options.address)
    if fit_batches is None:
        return trials, notes
    trials, fitted_notes = fit_batches(trials)  # its probes need the devices: the first group starts after
    groups.prestart(trials[0])
    return trials, [*notes, *fitted_notes]


def sweep_manifest(
    options: SweepOptions,
    space: SearchSpace,
    store: ResultStore,
    trials: list[TrialParams],
    notes: list[str],
    total: int,
) -> dict:
    """``sweep.json`` as a sweep starts (its ``economy`` is added at the end). ``total``: the trials it will run
    (``trials`` themselves, or for an adaptive search every study's)."""
    return {
        "sweep": store.sweep,
        "sweep_dir": str(store.root.resolve()),  # what its trials' specs name (--resume runs only there)
        "space": space.name,
        "description": space.description,
        "argv": list(options.command or sys.argv),
        "versions": versions(),
        "cluster": {"address": options.address or "local", "resources": ray.cluster_resources()},
        "trials": [t.to_dict() for t in trials],
        "planned_trials": total,
        "notes": notes,
        **search_record(space.search, space.grids, space.num_samples),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def resume_sweep(options: SweepOptions, store: ResultStore) -> Path | None:
    """Continue through Tune's experiment restore: finished trials stay, unfinished ones run again."""
    info = store.read_sweep_json()
    recorded = info.get("cluster", {}).get("address", "local")
    address = options.address or (None if recorded == "local" else recorded)
    with bytecode_cache() as bytecode:
        try:
            trials = [TrialParams.from_dict(t) for t in info.get("trials", [])]
            connect(options, address, trials, {**bytecode, **compile_cache_env(store.sweep)})
            print(f"resuming sweep {store.sweep}: {len(store.finished_params())} trials already have rows")
            with worker_groups(options, store):
                tuner = tune.Tuner.restore(
                    str(store.root / TUNE_DIR),
                    trainable=trainable(),
                    resume_unfinished=True,
                    resume_errored=False,
                    restart_errored=options.retry_failed,
                )
                started = time.time()
                fit_trials(tuner, store)
            # its trials' rows span the runs before it: a wall from this launch would not measure them
            return summarise(store, options, time.time() - started, launched_at=None)
        finally:
            cluster.shutdown()


TUNE_DIR = "_tune"


def train_storage(store: ResultStore) -> str:
    """Where Ray Train keeps its runs (checkpoints, fault markers): beside Tune's state in the sweep."""
    return str((store.root / "_ray").resolve())


def worker_groups(options: SweepOptions, store: ResultStore):
    """The worker-group pool of a Tune run under ``store`` (a context manager: ``group_pool``)."""
    return group_pool(store.sweep, train_storage(store), options.collective_timeout, options.share_workers)


# Trials in, the trials to sweep and notes out; called once the cluster is connected.
FitBatches = Callable[[list[TrialParams]], tuple[list[TrialParams], list[str]]]


def trials_tuner(
    options: SweepOptions,
    store: ResultStore,
    trials: list[TrialParams],
    callbacks: list,
    space: SearchSpace | None = None,
) -> tune.Tuner:
    """A Tune run of ``trials`` under ``store`` (its tables written by the callbacks), released as they fit.

    ``space``'s search settings add a Tune scheduler and, for an adaptive search, make ``trials`` the
    templates (one per grid point) of the trials its searcher proposes.
    """
    base_spec = TrialSpec(
        sweep=store.sweep,
        sweep_dir=str(store.root.resolve()),
        storage_path=train_storage(store),
        collective_timeout_s=options.collective_timeout,
        max_failures=options.max_failures,
        share_workers=options.share_workers,
        index=-1,
        params=TrialParams(),
    )
    search = space.search if space is not None else SearchConfig()
    fit = {"max_concurrent": options.max_concurrent_trials, "finished_params": store.finished_params}
    if search.adaptive:
        searcher = OptunaFitSearcher(
            trials,
            [space.distributions_of(t) for t in trials],
            space.num_samples,
            search.metric,
            search.mode,
            Capacity.of_cluster(),
            base_spec,
            storage=optuna_storage(store),
            **fit,
        )
    else:
        searcher = FitSearcher(trials, Capacity.of_cluster(), base_spec, **fit)
    return tune.Tuner(
        trainable(),
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            scheduler=build_scheduler(
                search,
                max((t.epochs for t in trials), default=1),
                space.num_samples if search.adaptive else 0,
            ),
            num_samples=planned_total(space, trials),
            # A trial's actor only drives its trial (through a shared worker group or a Train run of its
            # own), so the next trial can reuse it: each trial then skips the actor's start and imports.
            reuse_actors=True,
            trial_dirname_creator=trial_dirname,
        ),
        run_config=tune.RunConfig(
            name=TUNE_DIR,
            storage_path=str(store.root.resolve()),
            # Tune's own per-trial files in _tune/ (its TensorBoard files are off, below): without them
            # every fit warns that it found no metrics
            callbacks=[*callbacks, CSVLoggerCallback(), JsonLoggerCallback()],
            verbose=0,  # ProgressCallback prints the sweep's progress instead of Tune's tables
        ),
    )


OPTUNA_DB = "optuna.db"


def optuna_storage(store: ResultStore) -> str:
    """The sweep's Optuna studies, one sqlite file (``optuna-dashboard sqlite:///<path>`` opens it); absolute,
    as the searcher's saved state names it for ``--resume``."""
    return f"sqlite:///{(store.root / OPTUNA_DB).resolve()}"


def planned_total(space: SearchSpace | None, trials: list[TrialParams]) -> int:
    """Trials the sweep runs: ``trials``, or for an adaptive search each template's study of ``num_samples``."""
    adaptive = space is not None and space.search.adaptive
    return len(trials) * (space.num_samples if adaptive else 1)


def trainable():
    from raysweep.runtime.driver import train_driver_fn

    # The trial's own process needs only a sliver of CPU; its workers reserve theirs through Ray Train.
    return tune.with_resources(train_driver_fn, {"cpu": DRIVER_CPU})


def trial_dirname(trial) -> str:
    return trial.trial_id


def connect(options: SweepOptions, address: str | None, trials: list[TrialParams], env_vars: dict[str, str]) -> None:
    env_vars = {**env_vars, **early_stop_env()}
    if address:
        cluster.join(address, env_vars)
    else:
        cluster.start_local(local_num_cpus(trials), options.dashboard_host, options.dashboard, env_vars)
    interrupt.reinstall()
    plain_log_output()
    quiet_forwarded_logs()
    slow_step_warnings_to_file()
    if options.progress == "quiet":
        return
    print(f"Ray's logs: {logs_location()}")
    url = cluster.dashboard_url()
    token = " (it asks for Ray's token: `ray get-auth-token` prints it)" if cluster.token_auth_on() else ""
    print(f"Ray dashboard: {url}{token}" if url else "Ray dashboard: not available on this cluster")


def watch_callbacks(options: SweepOptions, sweep: str, store: ResultStore, total: int) -> list:
    """The ways to watch a sweep as it runs: terminal progress and sweep gauges, TensorBoard, trackers."""
    ranking = ranking_of(store.read_sweep_json())
    return [
        ProgressCallback(sweep, total, metrics=SweepMetrics(), ranking=ranking, style=options.progress),
        TensorBoardCallback(store.root),
        *tracker_callbacks(list(options.log_to), sweep, store.root),
    ]


def tune_environment() -> None:
    """Set before any ``Tuner.fit``."""
    # Tune's experiment state is what a resume starts from: keep it at most a second old.
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", "1")
    # TensorBoardCallback writes the sweep's runs; Tune's automatic one would add duplicates under _tune/.
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    # Tune's newer output engine prints an experiment box and "View detailed results here" at every
    # fit whatever the verbosity; the classic one is silent at verbose=0.
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")


def summarise(store: ResultStore, options: SweepOptions, elapsed: float, launched_at: datetime | None) -> Path | None:
    """The economy into sweep.json, the summary table and line; the report's path, if one was written."""
    economy = sweep_economy(store.read("trials"), available_devices(), launched_at)
    store.write_sweep_json({**store.read_sweep_json(), "economy": economy})
    print_summary(store, elapsed, economy)
    return print_report(store) if options.report else None


def fit_trials(tuner: tune.Tuner, store: ResultStore | None = None) -> None:
    """``tuner.fit()``, inside the ``group_pool`` its trials use; a signal stops it (``raysweep.interrupt``),
    and ``--resume`` continues the sweep of ``store`` (None: a run that nothing resumes, the max-batch search's)."""
    tune_environment()
    interrupt.resumable(store.root if store is not None else None)
    interrupt.fitting(True)
    try:
        tuner.fit()
    finally:
        interrupt.fitting(False)


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version(), "raysweep": raysweep_version()}
    commit = checkout_commit()
    if commit:
        out["raysweep_commit"] = commit
    for pkg in ("ray", "deepspeed", "torch", "timm", "pyarrow"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "missing"
    return out


def checkout_commit() -> str | None:
    """The git commit of the checkout raysweep runs from (with ``+dirty`` for local changes); None when
    it is installed from a package, or git is missing."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=5, check=True)
        return done.stdout.strip()

    try:
        return git("rev-parse", "HEAD") + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.SubprocessError):
        return None


def available_devices() -> float:
    """GPUs of the cluster, or on a CPU-only cluster its CPUs (what the trials could use)."""
    resources = ray.cluster_resources()
    return float(resources.get("GPU", 0.0) or resources.get("CPU", 0.0))


def print_summary(store: ResultStore, elapsed: float, economy: dict) -> None:
    """The trials' summary (``summary_table``), the best one's line, the totals."""
    summary = summarize_trials(store.read("trials"), store.read_sweep_json())
    print()
    print(format_table(summary.columns, summary.rows))
    best = summary.best
    print(f"best: {best.line()}" if best else f"best: none (no completed trial has a {summary.metric} value)")
    spent = economy_line(economy)
    spent = f"; {spent}" if spent else ""
    print(f"\n{len(summary.rows)} trials in {elapsed:.0f} s{spent}; results: {shell_path(store.root)}")
    print(f"  query: {query_hint(store)}")


def query_hint(store: ResultStore) -> str:
    """A query over this sweep's tables that runs as printed (the views are ``raysweep.query``'s)."""
    results_dir, sweep = shell_path(store.root.parent), shlex.quote(store.sweep)
    return f'python -m raysweep.query --results-dir {results_dir} --sweep {sweep} "SELECT * FROM trials"'


def print_report(store: ResultStore) -> Path | None:
    try:
        from analysis import analyze
    except ImportError:
        return None
    try:
        path = analyze(store.root)
    except Exception as e:  # the sweep's tables are written already; a report problem must not hide them
        print(f"report not written: {e}")
        return None
    print(f"report: {shell_path(path)}")
    html = path.with_name("report.html")
    if html.is_file():
        print(f"report: {shell_path(html)}")
    return path
