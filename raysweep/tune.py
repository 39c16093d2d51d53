"""``python -m raysweep.tune --space NAME``: run a search space as a Ray Tune sweep of DeepSpeed ViT trials."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import yaml

import raysweep.interrupt as interrupt
from raysweep.api import (
    SweepPlan,
    check_sweep,
    needs_missing_gpu,
    plan_checked,
    plan_resume,
    resolve_space,
    resume_sweep,
    run_planned,
)
from raysweep.core.command import ArgumentParser, exit_process, run_command
from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from raysweep.core.paths import user_path
from raysweep.core.schema import REPORTED_METRICS
from raysweep.options import SweepOptions
from raysweep.planning.max_batch import SearchLimits
from raysweep.planning.plan import trial_table
from raysweep.planning.search_config import SCHEDULERS, SEARCHERS, SearchChoices, describe
from raysweep.planning.space import SearchSpace, list_spaces, load_yaml
from raysweep.progress import PROGRESS_STYLES
from raysweep.watch.trackers import TRACKERS

EXAMPLES = """examples:
  python -m raysweep.tune --space batch_grid                       # embedded default: local Ray, CPU workers
  python -m raysweep.tune --space batch_grid --dry-run             # the trial table, nothing started
  python -m raysweep.tune --space batch_grid --model vit_base_patch16_224 --dataset synthetic --set image_size=224
  python -m raysweep.tune --space my_space.yaml --set num_workers=[1,2] --set epochs=1
  python -m raysweep.tune --space strong_scaling --address ray://head:10001
  python -m raysweep.tune --list-params                            # every trial parameter
"""


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="python -m raysweep.tune",
        description="Run a search space as a Ray Tune sweep; every trial is a Ray Train TorchTrainer "
        "running a DeepSpeed data-parallel ViT. Results are Parquet tables under --results-dir.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--space", help="bundled space name (see --list-spaces) or a path to a .yaml file")
    p.add_argument("--list-spaces", action="store_true", help="list the bundled spaces and exit")
    p.add_argument("--list-params", action="store_true", help="list every trial parameter and exit")
    p.add_argument(
        "--address", help="join this Ray cluster (e.g. ray://head:10001 or head:6379); default: start a local one"
    )
    p.add_argument(
        "--results-dir", default="./raysweep-results", help="where sweeps are written (default: %(default)s)"
    )
    p.add_argument("--name", help="sweep name (default: <space>-<YYYYmmdd-HHMMSS>)")
    p.add_argument(
        "--max-concurrent-trials",
        type=int,
        default=0,
        help="at most this many trials at once (default: as many as fit)",
    )
    p.add_argument("--model", help="set trial parameter model (timm name or preset)")
    p.add_argument("--dataset", help="set trial parameter dataset: digits, synthetic, cifar10, cifar100, imagefolder")
    p.add_argument("--data-dir", help="set trial parameter data_dir")
    p.add_argument("--download", action="store_true", help="download cifar10/cifar100 into --data-dir if missing")
    p.add_argument("--epochs", type=int, help="set trial parameter epochs")
    p.add_argument(
        "--repeats",
        type=int,
        help="runs of every trial, seeds seed..seed+N-1 (default: the space's repeats, else 1); the report "
        "claims a difference between points only when it holds over the repeats",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set any trial parameter; a YAML list makes it an axis: --set num_workers=[1,2] (repeatable)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print the expanded trial table and what each trial needs; start nothing"
    )
    p.add_argument(
        "--assume-gpus", type=int, default=None, metavar="N", help="with --dry-run: plan for one node of N GPUs"
    )
    p.add_argument(
        "--max-failures",
        type=int,
        default=0,
        help="restarts of a trial's worker group after a worker dies (default: 0)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=int,
        metavar="N",
        help="set trial parameter checkpoint_every: checkpoint the engine every N epochs, 0 = never (default: 1)",
    )
    p.add_argument(
        "--find-max-batch",
        action="store_true",
        help="first find each configuration's largest micro batch that fits (short probe trials: doubling, then "
        "bisection; out of memory is not retried), write <sweep>/max_batch/, then sweep the grid clipped to it",
    )
    p.add_argument(
        "--max-batch-probes",
        type=int,
        default=SearchLimits.max_probes,
        metavar="N",
        help="with --find-max-batch: at most N probes per configuration (default: %(default)s)",
    )
    p.add_argument(
        "--max-batch-resolution",
        type=int,
        default=SearchLimits.resolution,
        metavar="N",
        help="with --find-max-batch: stop bisecting once the edge is known within N samples (default: %(default)s)",
    )
    p.add_argument("--search", choices=list(SEARCHERS), help="how trials are picked (default: the space's, or grid)")
    p.add_argument(
        "--scheduler", choices=list(SCHEDULERS), help="stop poor trials early with this Tune scheduler (default: none)"
    )
    p.add_argument(
        "--num-samples",
        type=int,
        metavar="N",
        help="grid: draws of each point's distributions; random: trials in all; optuna: trials per grid point",
    )
    p.add_argument("--metric", help=f"what search and scheduler optimise: {', '.join(REPORTED_METRICS)}")
    p.add_argument("--mode", help="min or max (default: the space's, or max)")
    p.add_argument("--resume", metavar="SWEEP_DIR", help="continue an interrupted sweep; finished trials are kept")
    p.add_argument("--retry-failed", action="store_true", help="with --resume: run failed trials again")
    p.add_argument(
        "--collective-timeout",
        type=int,
        default=600,
        metavar="S",
        help="seconds before a hung collective fails a trial (default: 600)",
    )
    p.add_argument(
        "--dashboard-host", default="127.0.0.1", help="local Ray dashboard bind address (default: %(default)s)"
    )
    p.add_argument("--no-dashboard", action="store_true", help="start the local Ray without its dashboard")
    p.add_argument("--no-report", action="store_true", help="do not write the analysis report at the end")
    p.add_argument(
        "--progress",
        choices=PROGRESS_STYLES,
        default="lines",
        help="how the sweep shows its progress: a line per trial event, a progress bar, or quiet (failed trials "
        "and the summary only) (default: %(default)s)",
    )
    p.add_argument(
        "--probe-links",
        action="store_true",
        help="first time the cluster's collectives (python -m raysweep.probe) into <sweep>/links/links.parquet: "
        "the report then predicts scaling beyond the measured worker counts",
    )
    p.add_argument(
        "--no-shared-workers",
        action="store_true",
        help="start every trial's worker processes afresh (a Ray Train run per trial) instead of reusing a "
        "worker group across the trials of one shape; slower to start, nothing shared but the machine",
    )
    p.add_argument(
        "--log-to",
        action="append",
        default=[],
        choices=TRACKERS,
        help="also log every trial to this experiment tracker through Ray Tune's callback (repeatable); "
        "mlflow writes to <sweep>/mlflow.db and <sweep>/mlartifacts unless MLFLOW_TRACKING_URI is set",
    )
    return p


def parse_overrides(args: argparse.Namespace) -> dict:
    overrides: dict = {}
    for flag, key in (
        ("model", "model"),
        ("dataset", "dataset"),
        ("data_dir", "data_dir"),
        ("epochs", "epochs"),
        ("checkpoint_every", "checkpoint_every"),
    ):
        if getattr(args, flag) is not None:
            overrides[key] = getattr(args, flag)
    if args.download:
        overrides["download"] = True
    for item in args.set:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {item!r}: expected KEY=VALUE, e.g. --set epochs=3")
        try:
            value = load_yaml(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        if key.strip() == "slow_ranks" and not isinstance(value, list):
            value = raw  # "1,3" is a list of ranks, not a YAML value
        overrides[key.strip()] = value
    return overrides


def search_limits(args: argparse.Namespace) -> SearchLimits | None:
    """``--find-max-batch``'s bounds; the bounds alone are a mistake, not a silent no-op."""
    limits = SearchLimits(max_probes=args.max_batch_probes, resolution=args.max_batch_resolution)
    if args.find_max_batch:
        return limits
    if limits != SearchLimits():
        raise UsageError("--max-batch-probes and --max-batch-resolution only apply with --find-max-batch")
    return None


# Flags that shape a new sweep's trials or where it is written: a resumed sweep keeps its own.
NEW_SWEEP_ONLY = (
    "space", "name", "results_dir", "model", "dataset", "data_dir", "download", "epochs", "repeats", "set",
    "checkpoint_every", "search", "scheduler", "num_samples", "metric", "mode", "probe_links", "find_max_batch",
)  # fmt: skip


def refuse_idle_flags(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """A flag that would do nothing in the mode asked for is a mistake to say, not to ignore."""

    def given(dest: str) -> bool:
        return getattr(args, dest) != parser.get_default(dest)

    def flag(dest: str) -> str:
        return "--" + dest.replace("_", "-")

    if args.assume_gpus is not None and not args.dry_run:
        raise UsageError("--assume-gpus plans for GPUs this machine lacks and only applies with --dry-run")
    if args.retry_failed and not args.resume:
        raise UsageError("--retry-failed only applies with --resume SWEEP_DIR")
    if args.resume:
        for dest in NEW_SWEEP_ONLY:
            if given(dest):
                raise UsageError(
                    f"{flag(dest)} does not apply with --resume (the sweep keeps its own); drop {flag(dest)}"
                )
    if given("dashboard_host") and (args.no_dashboard or args.address):
        raise UsageError(
            "--dashboard-host applies to the local Ray's dashboard; drop it with --no-dashboard or --address"
        )


@dataclass(frozen=True)
class Command:
    """What the command line asks for, beyond how the sweep runs (``SweepOptions``)."""

    options: SweepOptions
    space: str | None
    overrides: dict
    repeats: int | None
    list_spaces: bool
    list_params: bool
    dry_run: bool
    assume_gpus: int | None
    resume: str | None
    search: SearchChoices = SearchChoices()


def typed_command(argv: list[str] | None) -> tuple[str, ...]:
    """The command line as the user typed it, for sweep.json: ``raysweep run ...`` keeps its ``run``."""
    if argv is None or (argv and sys.argv[len(sys.argv) - len(argv) :] == list(argv)):
        return tuple(sys.argv)
    return tuple(sys.argv[:1] + list(argv))


def parse_command(argv: list[str] | None) -> Command:
    """The flags as typed values: nothing below the CLI sees argparse."""
    parser = build_parser()
    args = parser.parse_args(argv)
    options = SweepOptions(
        results_dir=str(user_path(args.results_dir)),
        name=args.name,
        address=args.address,
        max_concurrent_trials=args.max_concurrent_trials,
        max_failures=args.max_failures,
        collective_timeout=args.collective_timeout,
        dashboard=not args.no_dashboard,
        dashboard_host=args.dashboard_host,
        report=not args.no_report,
        probe_links=args.probe_links,
        share_workers=not args.no_shared_workers,
        log_to=tuple(args.log_to),
        retry_failed=args.retry_failed,
        command=typed_command(argv),
        find_max_batch=search_limits(args),
        progress=args.progress,
    )
    refuse_idle_flags(args, parser)
    return Command(
        options=options,
        space=args.space,
        overrides=parse_overrides(args),
        repeats=args.repeats,
        list_spaces=args.list_spaces,
        list_params=args.list_params,
        dry_run=args.dry_run,
        assume_gpus=args.assume_gpus,
        resume=args.resume,
        search=SearchChoices(args.search, args.metric, args.mode, args.scheduler, args.num_samples),
    )


def main(argv: list[str] | None = None) -> int:
    with interrupt.handled():
        return run_command(lambda args: run(parse_command(args)), argv)


def run(command: Command) -> int:
    options = command.options
    if command.list_spaces:
        for name, description in list_spaces().items():
            print(f"{name:16s} {description}")
        return 0
    if command.list_params:
        for f in TrialParams.__dataclass_fields__.values():
            print(f"{f.name:24s} default {f.default!r:24s} {f.metadata.get('doc', '')}")
        return 0
    if command.resume and command.dry_run:
        for line in plan_resume(command.resume, options.retry_failed).lines():
            print(line)
        return 0
    if command.resume:
        return 0 if resume_sweep(command.resume, options).all_completed else 1
    if not command.space:
        raise UsageError("--space is required (a bundled name, see --list-spaces, or a .yaml path)")
    checked = check_sweep(options, resolve_space(command.space, command.overrides, command.search, command.repeats))
    space = checked.space

    # A GPU-only space on a machine without GPUs is skipped, and a dry run says so rather than
    # planning CPU trials that would never run (--assume-gpus plans for GPUs instead).
    planned_for_gpus = command.dry_run and command.assume_gpus is not None
    if needs_missing_gpu(space, options) and not planned_for_gpus:
        would = " would be" if command.dry_run else ""
        hint = " (plan it for GPUs with --assume-gpus N)" if command.dry_run else ""
        print(
            f"raysweep: space {space.name} needs a GPU and this machine has none;{would} skipped{hint}.",
            file=sys.stderr,
        )
        return 0

    if command.dry_run:
        print_plan(plan_checked(checked, command.assume_gpus))
        return 0
    return 0 if run_planned(checked).all_completed else 1


def print_plan(plan: SweepPlan) -> None:
    """The dry run's output: the space, the cluster planned for, the trial table and the notes (a scheduled
    or adaptive sweep: its search space, rungs and budget instead of the table)."""
    print(f"space {plan.space.name}: {plan.space.description}")
    print(f"cluster: {plan.cluster}")
    if not plan.space.search.plain:
        adaptive_dry_run(plan.space, plan.trials, plan.notes)
        return
    print(trial_table(plan.trials))
    for note in plan.notes:
        print(note)
    if plan.search is not None:
        for line in plan.search:
            print(line)
        print(f"at most {len(plan.trials)} trials after the search; dry run: nothing started.")
        return
    print(f"{len(plan.trials)} trials; dry run: nothing started.")


def adaptive_dry_run(space: SearchSpace, trials: list[TrialParams], notes: list[str]) -> None:
    """A scheduled or adaptive sweep's plan: its search space, the scheduler's rungs and the budget."""
    print("search space:")
    for index, grid in enumerate(space.grids):
        for name, value in grid.items():
            print(f"  {name}: {value}" if len(space.grids) == 1 else f"  [{index}] {name}: {value}")
    for name, value in space.fixed.items():
        print(f"  {name} = {value}")
    for note in notes:
        print(note)
    epochs = max((t.epochs for t in trials), default=0)
    budget = len(trials) * space.num_samples if space.search.adaptive else len(trials)
    for line in describe(space.search, epochs, budget):
        print(line)
    print("dry run: nothing started.")


if __name__ == "__main__":
    exit_process(main())
