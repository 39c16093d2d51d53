"""The Python API: ``run_sweep`` runs a search space on Ray and returns its tables; ``plan_sweep`` plans one
without running it (the dry run); ``load_sweep`` reads one back.

    import raysweep
    result = raysweep.run_sweep("batch_grid", overrides={"epochs": 1}, dashboard=False)
    result.to_pandas()  # the trials table; in a notebook, `result` alone shows the summary table

The command line (``python -m raysweep.tune``) is a thin layer over these functions; bad input raises
``UsageError`` with the message the CLI prints. A sweep is checked once (``check_sweep``): planning and
running start from the ``CheckedSweep`` it returns.
"""

from __future__ import annotations

import collections
import functools
import html
import shutil
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from raysweep.core.errors import UsageError
from raysweep.core.names import closest
from raysweep.core.params import TrialParams
from raysweep.core.paths import shell_path, user_path
from raysweep.core.ranking import BestTrial, best_trial, chosen_ranking, ranked, searched_of
from raysweep.core.schema import check_schema_version
from raysweep.core.status import is_finished
from raysweep.core.store import ResultStore, canonical_key, check_name, read_table
from raysweep.core.sweep_lock import SweepLock, lock_sweep
from raysweep.interrupt import resume_command
from raysweep.options import SweepOptions
from raysweep.planning.checks import check_values
from raysweep.planning.max_batch import SearchLimits, configurations, max_batch_path, search_plan
from raysweep.planning.plan import local_capacity, plan_trials, trial_rows, trial_table
from raysweep.planning.search_config import NO_CHOICES, SearchChoices, check_search
from raysweep.planning.space import SearchSpace, load_space, space_from_mapping
from raysweep.results.summary_table import summarize_trials
from raysweep.results.text_table import html_table
from raysweep.runtime.capacity import Capacity, check_local_fit
from raysweep.runtime.cluster import check_reachable
from raysweep.watch.trackers import start_trackers

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class SweepResult:
    """A sweep directory and its tables (read on first use, then kept)."""

    path: Path
    report: Path | None = None

    @functools.cached_property
    def trials(self) -> pa.Table:
        return read_table(self.path / "trials", "trials")

    @functools.cached_property
    def epochs(self) -> pa.Table:
        return read_table(self.path / "epochs", "epochs")

    @functools.cached_property
    def ranks(self) -> pa.Table:
        return read_table(self.path / "ranks", "ranks")

    @functools.cached_property
    def max_batch(self) -> pa.Table:
        """``--find-max-batch``'s table (empty when the sweep did not search)."""
        return read_table(self.path / "max_batch", "max_batch")

    @property
    def all_completed(self) -> bool:
        """Every trial ran to its last epoch, or to where the sweep's scheduler stopped it."""
        statuses = self.trials.column("status").to_pylist()
        return bool(statuses) and all(is_finished(s) for s in statuses)

    def best(self, metric: str | None = None, mode: str | None = None) -> BestTrial | None:
        """The best completed trial by the sweep's metric and mode (``sweep.json``; a plain grid without one:
        throughput), or by ``metric`` (a trials column) and ``mode``; None where no completed trial has a value.
        ``raysweep.core.ranking`` holds the rule (stopped and failed trials are no candidates; ties: smaller id)."""
        manifest = sweep_manifest(self.path)
        ranking = chosen_ranking(manifest, self.trials.column_names, metric, mode)
        return best_trial(self.trials.to_pylist(), ranking, searched_of(manifest))

    def best_frame(self, metric: str | None = None, mode: str | None = None):
        """The trials as a pandas DataFrame, best first by ``best``'s ranking (candidates first, then the rest)."""
        import pandas as pd

        manifest = sweep_manifest(self.path)
        ranking = chosen_ranking(manifest, self.trials.column_names, metric, mode)
        return pd.DataFrame(ranked(self.trials.to_pylist(), ranking), columns=self.trials.column_names)

    # In a notebook: a short repr, the CLI's summary table as HTML, and the tables as pandas DataFrames.

    def to_pandas(self, table: str = "trials") -> pd.DataFrame:
        """One of the sweep's tables as a pandas DataFrame: ``trials`` (the default), ``epochs``, ``ranks`` or
        ``max_batch`` (the columns are docs/results.md's Schema)."""
        tables = ("trials", "epochs", "ranks", "max_batch")
        if table not in tables:
            close = closest(table, tables)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(f"to_pandas: unknown table {table!r}; choose from {', '.join(tables)}{hint}")
        return getattr(self, table).to_pandas()

    def __repr__(self) -> str:
        statuses = collections.Counter(self.trials.column("status").to_pylist())
        counts = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
        trials = trials_count(statuses.total()) + (f": {counts}" if counts else "")
        report = f", report={str(self.report)!r}" if self.report else ""
        return f"SweepResult({str(self.path)!r}, {trials}{report})"

    def _repr_html_(self) -> str:
        """The summary the CLI prints (each trial's varied parameters and measures) and the report's answer."""
        summary = summarize_trials(self.trials, sweep_manifest(self.path))
        parts = [
            f"<p>sweep <code>{html.escape(str(self.path))}</code>: {trials_count(len(summary.rows))}</p>",
            html_table(summary.columns, summary.rows),
        ]
        if self.report is not None and self.report.is_file():
            parts += [
                f"<p><b>{html.escape(label)}:</b> {html.escape(text)}</p>" for label, text in report_lead(self.report)
            ]
            parts.append(f"<p>report: <code>{html.escape(str(self.report))}</code></p>")
        return "\n".join(parts)


def sweep_manifest(path: Path) -> dict:
    """``sweep.json`` of the sweep at ``path`` ({} without one)."""
    return ResultStore(path.parent, path.name).read_sweep_json() if (path / "sweep.json").is_file() else {}


def trials_count(n: int) -> str:
    return f"{n} trial{'' if n == 1 else 's'}"


def report_lead(report: Path) -> list[tuple[str, str]]:
    """The report's opening: its question (when the space asks one) and its answer, as (label, text)."""
    lead = []
    for line in report.read_text(encoding="utf-8").splitlines():
        for label in ("Question", "Answer"):
            if line.startswith(f"**{label}:**"):
                lead.append((label, line.removeprefix(f"**{label}:**").strip()))
        if lead and lead[-1][0] == "Answer":
            break
    return lead


def run_sweep(
    space: str | Path | Mapping[str, Any],
    *,
    results_dir: str | Path = "./raysweep-results",
    name: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    address: str | None = None,
    max_concurrent_trials: int = 0,
    max_failures: int = 0,
    collective_timeout: int = 600,
    dashboard: bool = True,
    dashboard_host: str = "127.0.0.1",
    report: bool = True,
    share_workers: bool = True,
    log_to: str | Sequence[str] = (),
    find_max_batch: bool | SearchLimits = False,
    probe_links: bool = False,
    search: str | None = None,
    scheduler: str | None = None,
    num_samples: int | None = None,
    metric: str | None = None,
    mode: str | None = None,
    repeats: int | None = None,
    progress: str = "lines",
) -> SweepResult:
    """Run ``space`` (a bundled name, a YAML path, or a mapping with a space file's keys) and return its tables.

    ``overrides`` sets trial parameters as ``--set`` does (a list makes an axis). ``find_max_batch`` (True,
    or ``SearchLimits`` to bound the search) first finds each configuration's largest micro batch that fits
    and sweeps the grid clipped to it (``<sweep>/max_batch/``). ``share_workers=False`` gives every trial
    fresh worker processes (``--no-shared-workers``). ``log_to`` names experiment trackers, one
    (``"mlflow"``) or several (``["mlflow", "wandb"]``); a tracker that cannot start raises ``UsageError``
    and leaves no sweep directory behind. Bad input raises ``UsageError``: options and values
    before Ray starts; models, datasets and data files while the first trial's workers start (then Ray
    stops and nothing is left behind). ``search`` (grid, random, optuna), ``scheduler`` (asha, median),
    ``num_samples``, ``metric`` and ``mode`` replace the space's own (``--search`` ... on the CLI).
    ``repeats`` runs every trial that many times (seeds ``seed`` .. ``seed + repeats - 1``; default: the
    space's ``repeats``, else 1). ``probe_links`` first times the cluster's collectives (``--probe-links``).
    ``progress``: ``"lines"`` (a line per trial event), ``"bar"`` (a progress bar) or ``"quiet"`` (failed
    trials and the summary only).
    """
    options = SweepOptions(
        results_dir=str(user_path(results_dir)),
        name=name,
        address=address,
        max_concurrent_trials=max_concurrent_trials,
        max_failures=max_failures,
        collective_timeout=collective_timeout,
        dashboard=dashboard,
        dashboard_host=dashboard_host,
        report=report,
        share_workers=share_workers,
        log_to=(log_to,) if isinstance(log_to, str) else tuple(log_to),
        find_max_batch=search_limits(find_max_batch),
        probe_links=probe_links,
        progress=progress,
    )
    choices = SearchChoices(search, metric, mode, scheduler, num_samples)
    return run_planned(check_sweep(options, resolve_space(space, overrides or {}, choices, repeats)))


def search_limits(find_max_batch: bool | SearchLimits) -> SearchLimits | None:
    """The API's ``find_max_batch`` (True, False or bounds) as the options hold it: bounds, or None for no search."""
    return SearchLimits() if find_max_batch is True else find_max_batch or None


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep would run on a cluster: its trials in order and what planning notes; nothing started."""

    space: SearchSpace
    cluster: str  # the capacity planned for, described
    trials: list[TrialParams]
    notes: list[str]
    search: list[str] | None  # with find_max_batch: what the search would probe

    # In a notebook: a short repr and the dry run's trial table as HTML.

    def __repr__(self) -> str:
        return f"SweepPlan(space={self.space.name!r}, {trials_count(len(self.trials))}, cluster={self.cluster!r})"

    def _repr_html_(self) -> str:
        """What the dry run prints: the space, the cluster planned for, the trial table and the notes."""
        header, rows, reasons = trial_rows(self.trials)
        described = f": {html.escape(self.space.description)}" if self.space.description else ""
        lines = [*reasons, *self.notes, *(self.search or [])]
        return "\n".join(
            [
                f"<p>space <code>{html.escape(self.space.name)}</code>{described}</p>",
                f"<p>cluster: {html.escape(self.cluster)}</p>",
                html_table(header, rows),
                *([f"<ul>{''.join(f'<li>{html.escape(line)}</li>' for line in lines)}</ul>"] if lines else []),
                f"<p>{trials_count(len(self.trials))}; nothing started.</p>",
            ]
        )


def plan_sweep(
    space: str | Path | Mapping[str, Any],
    *,
    overrides: Mapping[str, Any] | None = None,
    address: str | None = None,
    assume_gpus: int | None = None,
    find_max_batch: bool | SearchLimits = False,
    search: str | None = None,
    scheduler: str | None = None,
    num_samples: int | None = None,
    metric: str | None = None,
    mode: str | None = None,
    repeats: int | None = None,
) -> SweepPlan:
    """Plan ``space`` as ``run_sweep`` would, and start nothing: the dry run.

    It plans for the cluster at ``address`` (joined), else for one node of ``assume_gpus`` GPUs if given,
    else for this machine. Bad input raises ``UsageError`` as ``run_sweep`` does.
    """
    options = SweepOptions(address=address, find_max_batch=search_limits(find_max_batch))
    choices = SearchChoices(search, metric, mode, scheduler, num_samples)
    checked = check_sweep(options, resolve_space(space, overrides or {}, choices, repeats))
    if assume_gpus is None and needs_missing_gpu(checked.space, options):
        raise UsageError(f"space {checked.space.name} needs a GPU and this machine has none (plan it for assume_gpus)")
    return plan_checked(checked, assume_gpus)


def plan_checked(checked: CheckedSweep, assume_gpus: int | None = None) -> SweepPlan:
    """The plan of a checked sweep (``plan_sweep``, less the checks)."""
    options = checked.options
    if options.address:
        capacity = joined_capacity(options.address)
    else:
        capacity = local_capacity(checked.trials, assume_gpus)
    trials, notes = plan_trials(checked.space, capacity, local_files=not options.address)
    limits = options.find_max_batch
    search = search_plan(trials, limits) if limits is not None else None
    return SweepPlan(checked.space, capacity.describe(), trials, notes, search)


def joined_capacity(address: str) -> Capacity:
    from raysweep.runtime.cluster import join

    join(address)
    return Capacity.of_cluster()


def resolve_space(
    space: str | Path | Mapping[str, Any],
    overrides: Mapping[str, Any],
    choices: SearchChoices = NO_CHOICES,
    repeats: int | None = None,
) -> SearchSpace:
    if isinstance(space, Mapping):
        loaded = space_from_mapping("space", dict(space), "space mapping")
    elif isinstance(space, (str, Path)):
        loaded = load_space(str(space))
    else:
        raise UsageError(f"space must be a bundled name, a .yaml path or a mapping, got {type(space).__name__}")
    return loaded.with_overrides(dict(overrides)).with_paths_resolved().with_search(choices).with_repeats(repeats)


@dataclass(frozen=True)
class CheckedSweep:
    """A sweep whose options, name and trial values are checked: what planning and running start from."""

    options: SweepOptions
    space: SearchSpace
    name: str
    trials: list[TrialParams]  # the space's trials, their values checked (not yet planned for a cluster)


def check_sweep(options: SweepOptions, space: SearchSpace) -> CheckedSweep:
    """The options and every trial's values: what can be checked without torch or timm, before Ray starts.

    Models, datasets and (for a local cluster) data files are planning's checks (``checks.check_trial``),
    made on the started cluster while the first trial's workers start.
    """
    options.check()
    name = sweep_name(space, options)
    if options.address:
        check_reachable(options.address)  # before anything is written: a dead address leaves no sweep dir
    trials = space.expand()
    for params in trials:
        check_values(params)
    check_search(space.search, space.axis_kinds(), [t.epochs for t in trials], space.num_samples)
    if space.search.adaptive:
        space.searched_axes()  # the same in every grid
    if options.find_max_batch is not None:
        configurations(trials)  # refuses a space whose global_batch fixes the micro batch
    return CheckedSweep(options, space, name, trials)


def needs_missing_gpu(space: SearchSpace, options: SweepOptions) -> bool:
    """A GPU-only space planned for this machine, which has none (a joined cluster is asked later)."""
    if space.requires != "gpu" or options.address:
        return False
    import torch

    return torch.cuda.device_count() == 0


def sweep_name(space: SearchSpace, options: SweepOptions) -> str:
    return check_name("sweep", options.name or f"{space.name}-{time.strftime('%Y%m%d-%H%M%S')}")


def run_planned(checked: CheckedSweep) -> SweepResult:
    """Prepare the sweep directory, run (planning on the started cluster), and return the result.

    Input that planning refuses leaves nothing behind: the directories this call made are removed.
    """
    launched_at = datetime.now(timezone.utc)
    options, space, sweep, static = checked.options, checked.space, checked.name, checked.trials
    if needs_missing_gpu(space, options):
        raise UsageError(f"space {space.name} needs a GPU and this machine has none")
    if not options.address:
        check_local_fit(static)
    made = first_missing(Path(options.results_dir) / sweep)
    store, lock = prepare_results_dir(options.results_dir, sweep)
    from raysweep.sweep import run_sweep as run_on_ray

    fit_batches = None
    if options.find_max_batch is not None:
        from raysweep.max_batch_run import FitToEdges

        fit_batches = FitToEdges(options, store, options.find_max_batch)
    try:
        start_trackers(list(options.log_to), sweep, store.root)
        report = run_on_ray(options, space, sweep, store, static, launched_at, fit_batches)
    except UsageError:
        if made is not None and not (store.root / "sweep.json").exists():
            shutil.rmtree(made, ignore_errors=True)  # refused before the sweep began (or a tracker did not start)
        raise
    finally:
        lock.release()
    return SweepResult(store.root, report)


def first_missing(path: Path) -> Path | None:
    """The outermost directory of ``path`` that does not exist yet (what creating it would make)."""
    missing = None
    for candidate in (path, *path.parents):
        if candidate.exists():
            break
        missing = candidate
    return missing


def resume_sweep(path: str | Path, options: SweepOptions) -> SweepResult:
    """Continue an interrupted sweep: finished trials keep their rows (``retry_failed`` reruns failed ones)."""
    options.check()
    if options.log_to:
        raise UsageError("--log-to applies when a sweep starts; a resumed sweep keeps the trackers it started with")
    store = open_sweep(path)
    # The sweep's trials were clipped to its edges when it started: resuming reuses them, never searches.
    edges = max_batch_path(store)
    if not edges.is_file() and options.find_max_batch is not None:
        raise UsageError(
            f"--find-max-batch with --resume: {store.root} has no max_batch table; a resumed sweep keeps the "
            "trials it started with (start a new sweep to search)"
        )
    lock = lock_sweep(store.root, f"--resume {path}")
    if edges.is_file():
        print(f"find-max-batch: keeping {edges}; the sweep resumes at the micro batches it was clipped to")
    from raysweep.sweep import resume_sweep as resume_on_ray

    try:
        report = resume_on_ray(options, store)
    finally:
        lock.release()
    return SweepResult(store.root, report)


@dataclass(frozen=True)
class ResumePlan:
    """What ``--resume`` would run of an interrupted sweep: nothing started (``--resume DIR --dry-run``)."""

    sweep_dir: Path
    planned: int  # trials the sweep set out to run
    with_rows: int  # trials that have a row: they ran and are not run again (failed ones too, unless retried)
    failed: int  # of those, the failed ones
    retry_failed: bool  # the failed ones run again
    left: list[TrialParams] | None  # the trials still to run; None where a searcher proposes them as it goes

    def lines(self) -> list[str]:
        head = f"sweep {self.sweep_dir.name}: {self.with_rows} of {self.planned} trials have rows"
        if self.failed:
            again = "they run again" if self.retry_failed else "kept; --retry-failed runs them again"
            head += f" ({self.failed} failed: {again})"
        retried = self.failed if self.retry_failed else 0
        count = len(self.left) if self.left is not None else self.planned - self.with_rows + retried
        table = [trial_table(self.left)] if self.left else []
        return [head, *table, f"{count} trials left to run; dry run: nothing started."]


def plan_resume(path: str | Path, retry_failed: bool = False) -> ResumePlan:
    """What resuming the sweep at ``path`` would run, read from its directory; starts nothing."""
    store = open_sweep(path)
    info = store.read_sweep_json()
    trials = [TrialParams.from_dict(t) for t in info.get("trials", [])]
    rows = store.read("trials").select(["params_json", "status"]).to_pylist()
    failed = [r["params_json"] for r in rows if not is_finished(r["status"])]
    done = Counter(store.finished_params())
    if retry_failed:
        done.subtract(canonical_key(p) for p in failed)
    planned = int(info.get("planned_trials", len(trials)))
    left = None
    if planned == len(trials):  # every trial known up front (no adaptive searcher)
        left = []
        for trial in trials:
            if done[trial.key()] > 0:
                done[trial.key()] -= 1
            else:
                left.append(trial)
    return ResumePlan(store.root, planned, len(rows), len(failed), retry_failed, left)


def load_sweep(path: str | Path) -> SweepResult:
    """An existing sweep directory (``<results-dir>/<sweep>``) with its tables and report, if written.

    A sweep of an older schema version reads with nulls in the columns it lacks; one of a newer version
    raises ``UsageError`` naming the raysweep it needs.
    """
    root = user_path(path)
    if not root.is_dir():
        raise UsageError(f"sweep directory {path} does not exist")
    if not (root / "sweep.json").is_file() and not (root / "trials").is_dir():
        raise UsageError(f"{path} is not a raysweep sweep (no sweep.json and no trials/ in it)")
    if (root / "sweep.json").is_file():
        check_schema_version(ResultStore(root.parent, root.name).read_sweep_json(), str(root / "sweep.json"))
    report = root / "report" / "report.md"
    return SweepResult(root, report if report.is_file() else None)


def open_sweep(path: str | Path) -> ResultStore:
    """A sweep directory to resume: it must hold the sweep.json and Tune state a sweep writes."""
    import json

    root = user_path(path)
    if not root.is_dir():
        raise UsageError(f"--resume {path}: no such directory")
    if not (root / "sweep.json").is_file() or not (root / "_tune").is_dir():
        raise UsageError(f"--resume {path}: not a raysweep sweep (no sweep.json and _tune/ state in it)")
    try:
        written_at = json.loads((root / "sweep.json").read_text()).get("sweep_dir")
    except ValueError:
        raise UsageError(f"--resume {path}: sweep.json is not valid JSON") from None
    if written_at is not None and Path(written_at) != root.resolve():
        # Tune's saved trials and the searcher's state name the directory, for their tables and checkpoints
        raise UsageError(
            f"--resume {path}: the sweep was written at {written_at} and its saved trials name that directory; "
            "resume it there"
        )
    return ResultStore(root.parent, root.name)


def prepare_results_dir(results_dir: str, sweep: str) -> tuple[ResultStore, SweepLock]:
    """The new sweep's directory, locked by this process: a sweep of that name, running or not, is refused."""
    root = Path(results_dir)
    if root.exists() and not root.is_dir():
        raise UsageError(f"--results-dir {shell_path(results_dir)} is a file, not a directory")
    store = ResultStore(root, sweep)
    try:
        store.root.mkdir(parents=True, exist_ok=True)
        probe = store.root / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"--results-dir {shell_path(results_dir)} is not writable: {e.strerror}") from None
    lock = lock_sweep(store.root, f"sweep {sweep}")  # a sweep of this name running now is refused here
    has_rows = any((store.root / "trials").glob("*.parquet"))
    if has_rows or (store.root / "sweep.json").is_file():
        lock.release()
        raise UsageError(
            f"sweep {sweep} already {'has results' if has_rows else 'exists'} in {shell_path(root)}; continue it "
            f"with {resume_command(store.root)}, or choose another --name"
        )
    return store, lock


__all__ = [
    "SearchLimits",
    "SweepOptions",
    "SweepPlan",
    "SweepResult",
    "load_sweep",
    "plan_sweep",
    "resume_sweep",
    "run_sweep",
]
