"""Planning a sweep: expand its space, resolve and validate every trial for a cluster, check it fits."""

from __future__ import annotations

from collections.abc import Iterator

from raysweep.core.compile_decision import CompileDecision, decide_compile, engine_refusal
from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from raysweep.core.schema import params_row
from raysweep.planning.checks import check_files, check_trial
from raysweep.planning.space import SearchSpace
from raysweep.results.text_table import format_table
from raysweep.runtime.capacity import Capacity, Demand, check_local_fit, local_num_cpus


def plan_trials(
    space: SearchSpace, capacity: Capacity, *, local_files: bool = True
) -> tuple[list[TrialParams], list[str]]:
    """Expand, resolve for this cluster, validate, check each trial can ever fit and (``local_files``) that the
    image folders' files have sound headers."""
    trials, notes = [], []
    for params, fits in resolved_trials(space, capacity):
        check_trial(params, local_files=local_files)
        if not fits:
            demand = Demand.of(params)
            message = f"a trial needs {demand.describe()} but the cluster has {capacity.describe()}"
            if space.drop_unfit:
                notes.append(f"dropped: trial {swept_values(space, params)}: {unfit_reason(demand, capacity)}")
                continue
            raise UsageError(f"{message}; shrink it (e.g. --set num_workers=1) or join a bigger cluster")
        trials.append(params)
    if not trials:
        raise UsageError(f"space {space.name} has no trial that fits this cluster ({capacity.describe()})")
    if local_files:
        notes += check_files(trials)
    return trials, list(dict.fromkeys(notes))  # the repeats of a dropped point are one note


def first_trial(space: SearchSpace, capacity: Capacity) -> TrialParams | None:
    """The trial a sweep starts first: the space's first that fits, resolved as ``plan_trials`` resolves it.

    Read off the values alone (no registry or file checks), so that its workers can start while the
    planning checks run.
    """
    return next((params for params, fits in resolved_trials(space, capacity) if fits), None)


def resolved_trials(space: SearchSpace, capacity: Capacity) -> Iterator[tuple[TrialParams, bool]]:
    """The space's trials resolved for this cluster (device, precision), each with whether it can ever fit."""
    for params in space.expand():
        params = params.resolve(cluster_has_gpus=capacity.total_gpus > 0)
        yield params, capacity.place(Demand.of(params)) is not None  # place() changes nothing


def swept_values(space: SearchSpace, params: TrialParams) -> str:
    """The trial's axis values (and its size), enough to tell which grid point was dropped."""
    names = dict.fromkeys(["num_workers", "placement_strategy", *(k for grid in space.grids for k in grid)])
    return " ".join(f"{name}={getattr(params, name)}" for name in names)


def unfit_reason(demand: Demand, capacity: Capacity) -> str:
    nodes = len(capacity.nodes)
    if demand.strategy == "STRICT_SPREAD" and demand.ranks > nodes:
        plural = "s" if nodes != 1 else ""
        why = f"STRICT_SPREAD needs a node for each of its {demand.ranks} ranks; the cluster has {nodes} node{plural}"
    elif demand.strategy == "STRICT_PACK":
        why = f"STRICT_PACK puts all {demand.ranks} ranks on one node and no node holds them"
    else:
        why = f"its {demand.ranks} ranks do not fit the cluster's free CPUs and GPUs"
    return f"{why} (needs {demand.describe()}; cluster: {capacity.describe()})"


def local_capacity(trials: list[TrialParams], assume_gpus: int | None) -> Capacity:
    if assume_gpus is not None:
        return Capacity(
            {"node-0": {"CPU": float(max(assume_gpus * 8, local_num_cpus(trials))), "GPU": float(assume_gpus)}}
        )
    import torch

    check_local_fit(trials)
    return Capacity({"local": {"CPU": float(local_num_cpus(trials)), "GPU": float(torch.cuda.device_count())}})


def trial_table(trials: list[TrialParams], columns: list[str] | None = None) -> str:
    header, rows, reasons = trial_rows(trials, columns)
    return "\n".join([format_table(header, rows), *reasons])


def trial_rows(
    trials: list[TrialParams], columns: list[str] | None = None
) -> tuple[list[str], list[list[str]], list[str]]:
    """The plan's trial table: its header, a row of text cells per trial (``#`` first) and a line per distinct
    reason of ``compile=auto``'s planned choices."""
    columns = columns or [
        "num_workers",
        "micro_batch_per_worker",
        "grad_accum_steps",
        "global_batch",
        "model",
        "dataset",
        "device",
        "precision",
        "engine",
        "zero_stage",
        "placement_strategy",
    ]
    # Whatever else the space varies (slow_ranks, optimizer, lr, ...) gets a column too.
    varying = [
        f for f in TrialParams.field_names() if f not in columns and len({str(getattr(t, f)) for t in trials}) > 1
    ]
    choices = [planned_compile(t) if t.compile == "auto" else None for t in trials]
    auto = any(t.compile == "auto" for t in trials)
    columns = [*columns, *varying, *(["compile_choice"] if auto else []), "needs"]
    rows = []
    for i, (t, choice) in enumerate(zip(trials, choices)):
        values = {**params_row(t), "compile_choice": choice_label(choice), "needs": Demand.of(t).describe()}
        rows.append([str(i)] + [str(values[c]) or "-" for c in columns])
    return ["#", *columns], rows, compile_reasons(choices)


def compile_reasons(choices: list[CompileDecision | None]) -> list[str]:
    """One line per distinct reason of ``compile=auto``'s planned choices, naming its trials (``#``)."""
    trials: dict[str, list[int]] = {}
    for i, choice in enumerate(choices):
        if choice is not None:
            trials.setdefault(choice.reason, []).append(i)
    return [
        f"compile, trial{'s' if len(indices) > 1 else ''} {index_ranges(indices)}: {reason}"
        for reason, indices in trials.items()
    ]


def index_ranges(indices: list[int]) -> str:
    """``[0, 1, 2, 5]`` as ``0-2, 5``."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def planned_compile(params: TrialParams) -> CompileDecision | None:
    """``compile=auto``'s choice as planned, from the default figures (a running sweep's trials may have
    measured their own by then); None where it turns on steps known only once the data is read (the whole
    split of a dataset on disk): the trial decides at its start."""
    if not engine_refusal(params) and not params.train_samples and params.dataset != "synthetic":
        return None
    return decide_compile(params, params.steps_per_epoch(num_train=0) * params.epochs)


def choice_label(choice: CompileDecision | None) -> str:
    if choice is None:
        return "at start"
    if not choice.compiled:
        return "eager"
    return "compiled" if choice.mode == "default" else f"compiled ({choice.mode})"
