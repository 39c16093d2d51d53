"""Predicted strong and weak scaling beyond the measured worker counts: ``predict_scaling`` and its CLI.

    python -m analysis.predict SWEEP --nodes M --gpus-per-node G [--link NAME|links.parquet] [--intra-link ...]

Calibrated on the sweep's 1-rank trials (per-rank compute, ``analysis.prediction.step_model.ComputeCurve``), a link
table (the sweep's ``links/links.parquet`` from the link probe, another probe's, or a named link) and the sweep's
multi-rank trials (what the ranks' coupling adds as a share of compute, ``step_model.Contention``; at counts no
trial calibrates, the coupled probe's share where the link table has ``coupled`` rows, ``prediction.coupling``),
it predicts each configuration's step time, throughput, speedup and efficiency for N ranks packed G to a node on
up to M nodes (``analysis.prediction.step_model``), beside what the sweep measured at the same N where it ran.
Every row is a prediction; ``measured_*`` columns hold the measurement where one exists; ``extrapolated`` marks the rows
beyond what calibrated the model, and ``extrapolation`` says why. A sweep of three or more worker counts also
validates itself: each count beyond its two smallest predicted from the smaller counts alone (``holdout``).
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from analysis.prediction.coupling import coupled_from_table, probed_shares
from analysis.prediction.link_model import INTER_NODE, INTRA_NODE, NAMED_LINKS, Links, links_from_table, named_link
from analysis.prediction.step_model import (
    ComputeCurve,
    Contention,
    Engine,
    StepTerms,
    comm_s,
    fit_contention,
    step_traffic,
)
from analysis.rows.errors import AnalysisError
from analysis.rows.groups import step_key
from analysis.rows.load import load_sweep
from raysweep.core.command import ArgumentParser, exit_process, run_command
from raysweep.core.status import is_completed

LINKS_FILE = Path("links") / "links.parquet"
# Columns older tables (or tables built by hand) may lack: NULL there.
OPTIONAL_COLUMNS = ("comm_overlap", "comm_kernel_ms", "trainable_params", "num_nodes")
PREDICT_BEYOND = 4  # the report predicts up to this many times the most ranks the sweep measured
NO_LINKS = f"the sweep has no link table ({LINKS_FILE}: --probe-links or python -m raysweep.probe)"
MISS_TOLERANCE = 0.15  # a prediction further than this from its measurement names the term it got wrong
# Where the predictor was checked against measurement: the validation script's summary (predicted against measured
# per run, scaling and worker count), read for the CLI's closing line; absent outside a checkout.
VALIDATION_SUMMARY = Path(__file__).resolve().parents[2] / "docs" / "results" / "cpu16-prediction" / "summary.csv"


@dataclass
class Prediction:
    """One configuration at one worker count: the model's terms, its prediction, the measurement beside it."""

    configuration: str  # JSON: the per-rank step's parameters less the micro batch
    scaling: str  # strong (global batch fixed) or weak (micro batch fixed)
    num_workers: int
    nodes: int
    ranks_per_node: int
    micro_batch: int
    global_batch: int
    link: str
    compute_ms: float
    compute_source: str  # measured, line or proportional (ComputeCurve)
    comm_ms: float
    overlap: float
    overlap_source: str  # measured, given, or "none (bound)" where no multi-rank trial measured it
    contention_share: float  # what this many ranks' coupling adds, as a share of compute (step_model.Contention)
    contention_ms: float  # contention_share x compute_ms x slowest
    contention_source: str  # trials, probe (the coupled probe), between or beyond them, none (Contention.source)
    calibrated_on: str  # the worker counts whose trials calibrated the model, comma-separated
    step_time_ms: float
    step_time_full_overlap_ms: float
    throughput: float
    speedup: float
    efficiency: float
    extrapolated: bool  # beyond what calibrated the model: more ranks or nodes, or a link class no probe timed
    extrapolation: str | None  # why, "; "-separated; None where not extrapolated
    measured: bool  # the sweep ran this configuration at this worker count
    measured_step_time_ms: float | None = None
    measured_min_ms: float | None = None
    measured_max_ms: float | None = None
    measured_repeats: int = 0  # the trials the measurement is the median of
    measured_comm_ms: float | None = None
    error: float | None = None  # predicted / measured step time - 1
    missed_term: str | None = None  # beyond MISS_TOLERANCE: compute or comm, whichever is further off


@dataclass(frozen=True)
class Calibration:
    """What the model takes from a sweep for one configuration: its compute curve, traffic and overlap."""

    configuration: str
    compute: ComputeCurve
    engine: Engine
    trainable_params: int
    overlap: float | None
    overlap_source: str  # measured (multi-rank trials' comm_overlap), given, or "none (bound)"
    base_micro_batches: tuple[int, ...]
    global_batches: tuple[int, ...]
    counts: tuple[int, ...]  # the worker counts of the trials it was calibrated on
    nodes: int  # the most nodes those trials ran on
    contention: Contention = Contention()


def configuration_key(row: pd.Series) -> str:
    params = json.loads(step_key(row))
    params.pop("micro_batch_per_worker")
    return json.dumps(params, sort_keys=True)


def calibrations(trials: pd.DataFrame, trainable_params: int | None = None) -> list[Calibration]:
    """One per configuration with completed 1-rank trials; ``trainable_params`` where the table lacks it."""
    trials = trials.assign(configuration=trials.apply(configuration_key, axis=1))
    found = []
    for configuration, group in trials.groupby("configuration", sort=True):
        single = group[group["num_workers"] == 1].dropna(subset=["step_time_ms"])
        if single.empty:
            continue
        medians = single.groupby("micro_batch_per_worker")["step_time_ms"].median()
        params = trainable_params or first_value(group, "trainable_params")
        if not params:
            raise AnalysisError(
                "the trials have no trainable_params (recorded since the link probe); pass trainable_params"
            )
        overlap = group.loc[group["num_workers"] > 1, "comm_overlap"].dropna()
        found.append(
            Calibration(
                configuration,
                ComputeCurve(tuple(float(b) for b in medians.index), tuple(float(t) for t in medians)),
                Engine.of_trial(single.iloc[0].to_dict()),
                int(params),
                float(overlap.median()) if len(overlap) else None,
                "measured" if len(overlap) else "none (bound)",
                tuple(sorted(int(b) for b in medians.index)),
                tuple(sorted({int(b) for b in group["global_batch"].dropna()})),
                tuple(sorted({int(n) for n in group["num_workers"]})),
                max(1, int(group["num_nodes"].max())) if group["num_nodes"].notna().any() else 1,
            )
        )
    if not found:
        raise AnalysisError("no completed 1-rank trial to calibrate the per-rank compute on")
    return found


def first_value(frame: pd.DataFrame, column: str) -> float | None:
    values = frame[column].dropna()
    return float(values.iloc[0]) if len(values) else None


def worker_counts(nodes: int, gpus_per_node: int, measured: set[int]) -> list[int]:
    """1, 2, 4, ... up to nodes x gpus_per_node, that count itself, and every measured count within it."""
    top = nodes * gpus_per_node
    counts = {1, top} | {n for n in measured if n <= top}
    n = 2
    while n < top:
        counts.add(n)
        n *= 2
    return sorted(counts)


def step_terms(
    calibration: Calibration, n: int, micro_batch: int, nodes: int, links: Links, slowest: float
) -> StepTerms:
    """The step's terms for ``n`` ranks over ``nodes`` nodes at ``micro_batch``."""
    per_node = math.ceil(n / nodes)
    traffic = step_traffic(calibration.engine, calibration.trainable_params)
    compute = calibration.compute.at(micro_batch)
    slowest = slowest if n > 1 else 1.0
    return StepTerms(
        compute_ms=compute,
        comm_ms=comm_s(traffic, links, per_node, nodes) * 1000.0,
        overlap=calibration.overlap if calibration.overlap is not None else 0.0,
        contention_ms=calibration.contention.ms(compute * slowest, per_node),
        slowest=slowest,
    )


def with_contention(
    calibration: Calibration,
    trials: pd.DataFrame,
    links: Links,
    slowest: float,
    probed: tuple[tuple[int, float], ...] = (),
) -> Calibration:
    """``calibration`` with the contention share fitted to its multi-rank ``trials`` (``fit_contention``): each
    (worker count, micro batch)'s median step less the idle-link terms, on the nodes the trials ran on, where ranks
    shared a host; a point whose link class ``links`` lacks (a named inter-node link, trials on one node) is left
    out. ``probed``: the coupled probe's shares (``coupling.probed_shares``), for the counts no trial calibrates."""
    multi = trials[(trials["configuration"] == calibration.configuration) & (trials["num_workers"] > 1)]
    multi = multi.dropna(subset=["step_time_ms"])
    points = []
    for (n, micro), group in multi.groupby(["num_workers", "micro_batch_per_worker"]):
        nodes = max(1, int(group["num_nodes"].max())) if group["num_nodes"].notna().any() else 1
        try:
            terms = step_terms(calibration, int(n), int(micro), nodes, links, slowest)
        except AnalysisError:  # the link table lacks the class these trials crossed: no point to fit against
            continue
        residual = float(group["step_time_ms"].median()) - replace(terms, contention_ms=0.0).step_ms
        points.append((math.ceil(int(n) / nodes), terms.compute_ms * terms.slowest, residual))
    return replace(calibration, contention=fit_contention(points, probed))


def extrapolation(calibration: Calibration, n: int, nodes: int, links: Links) -> list[str]:
    """Why a prediction lies beyond what calibrated it: more ranks or nodes than its trials ran, a link class no
    probe timed. (The device is always the sweep's own: the compute term is its 1-rank trials.)"""
    reasons = []
    most = max(calibration.counts)
    if n > most:
        reasons.append(f"beyond the {most} rank{'s' if most > 1 else ''} calibrated")
    if nodes > calibration.nodes:
        reasons.append(f"{nodes} nodes, calibrated on {calibration.nodes}")
    for link_class in links.classes_used(math.ceil(n / nodes), nodes):
        if link_class not in links.measured:
            reasons.append(f"{link_class} link {links.name}: datasheet figures, never measured")
    return reasons


def predict_point(
    calibration: Calibration, scaling: str, n: int, micro_batch: int, gpus_per_node: int, links: Links, slowest: float
) -> Prediction:
    nodes = math.ceil(n / gpus_per_node)
    per_node = min(n, gpus_per_node)
    terms = step_terms(calibration, n, micro_batch, nodes, links, slowest)
    step = terms.step_ms
    global_batch = micro_batch * calibration.engine.grad_accum * n
    reasons = extrapolation(calibration, n, nodes, links)
    return Prediction(
        configuration=calibration.configuration,
        scaling=scaling,
        num_workers=n,
        nodes=nodes,
        ranks_per_node=per_node,
        micro_batch=micro_batch,
        global_batch=global_batch,
        link=links.name,
        compute_ms=terms.compute_ms,
        compute_source=calibration.compute.source(micro_batch),
        comm_ms=terms.comm_ms,
        overlap=terms.overlap,
        overlap_source=calibration.overlap_source,
        contention_share=calibration.contention.share(per_node),
        contention_ms=terms.contention_ms,
        contention_source=calibration.contention.source(per_node),
        calibrated_on=",".join(str(c) for c in calibration.counts),
        step_time_ms=step,
        step_time_full_overlap_ms=replace(terms, overlap=1.0).step_ms,
        throughput=global_batch / step * 1000.0,
        speedup=float("nan"),
        efficiency=float("nan"),
        extrapolated=bool(reasons),
        extrapolation="; ".join(reasons) or None,
        measured=False,
    )


def series(calibration: Calibration, counts: list[int]) -> list[tuple[str, int, list[tuple[int, int]]]]:
    """(scaling, base, [(N, micro batch)]): strong per global batch the sweep ran, weak per 1-rank micro batch."""
    accum = calibration.engine.grad_accum
    out = []
    for batch in calibration.global_batches:
        points = [(n, batch // (n * accum)) for n in counts if batch % (n * accum) == 0]
        if len(points) > 1:
            out.append(("strong", batch, points))
    for micro in calibration.base_micro_batches:
        out.append(("weak", micro, [(n, micro) for n in counts]))
    return out


def with_measurements(prediction: Prediction, trials: pd.DataFrame) -> Prediction:
    """The sweep's trials of this configuration, worker count and micro batch beside the prediction."""
    same = trials[
        (trials["configuration"] == prediction.configuration)
        & (trials["num_workers"] == prediction.num_workers)
        & (trials["micro_batch_per_worker"] == prediction.micro_batch)
    ].dropna(subset=["step_time_ms"])
    if same.empty:
        return prediction
    measured = float(same["step_time_ms"].median())
    prediction.measured = True
    prediction.measured_step_time_ms = measured
    prediction.measured_min_ms = float(same["step_time_ms"].min())
    prediction.measured_max_ms = float(same["step_time_ms"].max())
    prediction.measured_repeats = len(same)
    comm = same["comm_kernel_ms"].dropna()
    prediction.measured_comm_ms = float(comm.median()) if len(comm) else None
    prediction.error = prediction.step_time_ms / measured - 1.0
    if abs(prediction.error) > MISS_TOLERANCE:
        prediction.missed_term = missed_term(prediction)
    return prediction


def missed_term(p: Prediction) -> str:
    """Which term is further off: the communication (the collectives' exposed part, against the profiled comm
    time's exposed part) or the compute (with its contention, against the rest of the measured step)."""
    if p.measured_comm_ms is None:
        return "compute or comm (no profiled comm time to tell)"
    measured_compute = p.measured_step_time_ms - p.measured_comm_ms * (1.0 - p.overlap)
    comm_off = (p.comm_ms - p.measured_comm_ms) * (1.0 - p.overlap)
    compute_off = p.compute_ms + p.contention_ms - measured_compute
    term = "comm" if abs(comm_off) >= abs(compute_off) else "compute"
    off = comm_off if term == "comm" else compute_off
    return f"{term} ({off:+.1f} ms)"


def predict_from_trials(
    trials: pd.DataFrame,
    links: Links,
    nodes: int,
    gpus_per_node: int,
    slowest: float = 1.0,
    trainable_params: int | None = None,
    overlap: float | None = None,
    calibrate_on: set[int] | None = None,
    probed: tuple[tuple[int, float], ...] = (),
) -> pd.DataFrame:
    """The predictions for a trials table (completed trials, the sweep's columns); one row per ``Prediction``.

    ``overlap``: a fixed share in place of the measured one (0: the bound of none, 1: full). ``calibrate_on``:
    the worker counts whose trials calibrate the model (default: every count the table holds); the measurements
    beside the predictions come from every trial, so a count left out of it is predicted held out. ``probed``:
    (ranks per host, share) from the coupled probe, the contention at counts no calibrating trial ran.
    """
    if nodes < 1 or gpus_per_node < 1:
        raise AnalysisError(f"nodes and gpus-per-node must be 1 or more, not {nodes} and {gpus_per_node}")
    trials = completed(trials)
    counts = worker_counts(nodes, gpus_per_node, measured_counts(trials))
    return predict_counts(
        trials, links, counts, gpus_per_node, slowest, trainable_params, overlap, calibrate_on, probed
    )


def completed(trials: pd.DataFrame) -> pd.DataFrame:
    """The completed trials with their configuration key and every optional column (NULL where absent)."""
    trials = trials[trials["status"].map(is_completed)] if "status" in trials.columns else trials
    optional = {c: float("nan") for c in OPTIONAL_COLUMNS if c not in trials.columns}
    return trials.assign(configuration=trials.apply(configuration_key, axis=1), **optional)


def measured_counts(trials: pd.DataFrame) -> set[int]:
    return {int(n) for n in trials.dropna(subset=["step_time_ms"])["num_workers"]}


def predict_counts(
    trials: pd.DataFrame,
    links: Links,
    counts: list[int],
    gpus_per_node: int,
    slowest: float = 1.0,
    trainable_params: int | None = None,
    overlap: float | None = None,
    calibrate_on: set[int] | None = None,
    probed: tuple[tuple[int, float], ...] = (),
) -> pd.DataFrame:
    """``predict_from_trials`` at ``counts`` of ``completed`` trials."""
    calibrating = trials if calibrate_on is None else trials[trials["num_workers"].isin(calibrate_on)]
    rows = []
    for calibration in calibrations(calibrating, trainable_params):
        if overlap is not None:
            calibration = replace(calibration, overlap=overlap, overlap_source="given")
        calibration = with_contention(calibration, calibrating, links, slowest, probed)
        for scaling, _base, points in series(calibration, counts):
            predicted = [
                with_measurements(predict_point(calibration, scaling, n, b, gpus_per_node, links, slowest), trials)
                for n, b in points
            ]
            one = predicted[0]
            for p in predicted:
                p.speedup = p.throughput / one.throughput
                p.efficiency = p.speedup / p.num_workers * one.num_workers
            rows += [asdict(p) for p in predicted]
    return pd.DataFrame(rows)


MIN_HOLDOUT_COUNTS = 3  # the smallest two calibrate (the 1-rank compute and the contention); a third is predicted


def holdout(
    trials: pd.DataFrame, links: Links, slowest: float = 1.0, probed: tuple[tuple[int, float], ...] = ()
) -> pd.DataFrame:
    """The sweep validating itself: each worker count beyond its two smallest predicted from the smaller counts'
    trials alone (``calibrate_on``), on the nodes its trials ran on, beside its measurement; the measured rows of
    ``predict_from_trials`` at the held-out counts (``calibrated_on`` says which counts calibrated each; the coupled
    probe's ``probed`` shares fill the counts above them, ``contention_source``). Empty
    with fewer than ``MIN_HOLDOUT_COUNTS`` measured worker counts or none of 1 rank."""
    trials = completed(trials)
    counts = sorted(measured_counts(trials))
    if len(counts) < MIN_HOLDOUT_COUNTS or counts[0] != 1:
        return pd.DataFrame()
    frames = []
    for held in counts[2:]:
        below = {c for c in counts if c < held}
        nodes = trials.loc[trials["num_workers"] == held, "num_nodes"].max()
        per_node = math.ceil(held / (int(nodes) if pd.notna(nodes) and nodes >= 1 else 1))
        frame = predict_counts(
            trials, links, sorted(below | {held}), per_node, slowest, calibrate_on=below, probed=probed
        )
        frames.append(frame[(frame["num_workers"] == held) & frame["measured"]])
    return pd.concat(frames, ignore_index=True)


def holdout_summary(frame: pd.DataFrame) -> str:
    """One sentence: the worst held-out error at each held-out count, what calibrated it, and what it says of the
    predictions beyond the measured counts; "" for an empty ``frame``."""
    if frame.empty:
        return ""
    parts = []
    for held, rows in frame.groupby("num_workers", sort=True):
        worst = rows.loc[rows["error"].abs().idxmax()]
        series = f" (the worst of {len(rows)} series)" if len(rows) > 1 else ""
        parts.append(
            f"held-out error at {held} ranks from {and_list(worst['calibrated_on'].split(','))}: "
            f"{worst['error']:+.1%}{series}"
        )
    top = int(frame["num_workers"].max())
    return f"{'; '.join(parts)}; predictions beyond {top} ranks carry at least that error."


def and_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def resolve_links(sweep_dir: Path | None, link: str | None, intra_link: str | None) -> Links:
    """The sweep's own probe, replaced per class by ``link`` and ``intra_link`` (a name or a links.parquet)."""
    found = None
    own = sweep_dir / LINKS_FILE if sweep_dir is not None else None
    if own is not None and own.is_file():
        found = links_from_table(pq.read_table(own), "probe")
    for text, link_class in ((link, None), (intra_link, INTRA_NODE)):
        if not text:
            continue
        given = links_of(text, link_class)
        found = given if found is None else merge(found, given)
    if found is None:
        raise AnalysisError(
            f"no link table: the sweep has no {LINKS_FILE} (run python -m raysweep.probe, or the sweep with "
            f"--probe-links); pass --link with one of {', '.join(NAMED_LINKS)} or a links.parquet"
        )
    return found


def sweep_probed(sweep_dir: Path) -> tuple[tuple[int, float], ...]:
    """The coupled probe's shares from the sweep's own link table (``coupling.probed_shares``); () without one."""
    own = sweep_dir / LINKS_FILE
    return probed_shares(coupled_from_table(pq.read_table(own))) if own.is_file() else ()


def links_of(text: str, link_class: str | None) -> Links:
    path = Path(text)
    if text.endswith(".parquet") or path.is_file():
        if not path.is_file():
            raise AnalysisError(f"link table {path} does not exist")
        return links_from_table(pq.read_table(path), path.parent.parent.name or str(path))
    return named_link(text, link_class)


def merge(base: Links, given: Links) -> Links:
    for link_class in (INTRA_NODE, INTER_NODE):
        if any(key[0] == link_class for key in given.fits):
            base = base.with_class(link_class, given)
    return Links(given.name if base.name.endswith(given.name) else base.name, base.fits, base.measured)


def report_predictions(sweep_dir: Path, trials: pd.DataFrame) -> pd.DataFrame:
    """The predictions a sweep's report shows: ``predict_from_trials`` over its own link table, one node of up to
    ``PREDICT_BEYOND`` x the most ranks measured; ``AnalysisError`` where there is no link table or nothing to
    calibrate on."""
    if not (sweep_dir / LINKS_FILE).is_file():
        raise AnalysisError(NO_LINKS)
    most_ranks = PREDICT_BEYOND * int(trials["num_workers"].max())
    links = resolve_links(sweep_dir, None, None)
    return predict_from_trials(trials, links, 1, most_ranks, probed=sweep_probed(sweep_dir))


def report_holdout(sweep_dir: Path, trials: pd.DataFrame) -> pd.DataFrame:
    """``holdout`` over the sweep's own link table."""
    if not (sweep_dir / LINKS_FILE).is_file():
        raise AnalysisError(NO_LINKS)
    return holdout(trials, resolve_links(sweep_dir, None, None), probed=sweep_probed(sweep_dir))


def predict_scaling(
    sweep_dir: str | Path,
    nodes: int,
    gpus_per_node: int,
    link: str | None = None,
    intra_link: str | None = None,
    slowest: float = 1.0,
) -> pa.Table:
    """Predicted scaling of a sweep's configurations on ``nodes`` x ``gpus_per_node`` ranks, as a table.

    ``link``: a named link (``analysis.prediction.link_model.NAMED_LINKS``) or a links.parquet, for its own class
    (a named Ethernet or InfiniBand link is the inter-node one); ``intra_link`` likewise for within a node; the sweep's
    own probe (``links/links.parquet``) fills what they leave. ``slowest``: the slowest rank's compute over the
    others'. Raises ``AnalysisError`` on unusable input.
    """
    data = load_sweep(sweep_dir)
    links = resolve_links(Path(sweep_dir), link, intra_link)
    frame = predict_from_trials(data.trials, links, nodes, gpus_per_node, slowest, probed=sweep_probed(Path(sweep_dir)))
    return pa.Table.from_pandas(frame, preserve_index=False)


def sweep_holdout(
    sweep_dir: str | Path, link: str | None = None, intra_link: str | None = None, slowest: float = 1.0
) -> pd.DataFrame:
    """``holdout`` of a sweep's trials on the links ``predict_scaling`` resolves."""
    links = resolve_links(Path(sweep_dir), link, intra_link)
    return holdout(load_sweep(sweep_dir).trials, links, slowest, sweep_probed(Path(sweep_dir)))


def prediction_lines(table: pa.Table) -> str:
    """The predictions as a text table, one line per configuration series and worker count; an extrapolated row is
    marked * and the reasons follow the table."""
    frame = table.to_pandas()
    header = (
        f"{'scaling':<7} {'N':>4} {'nodes':>5} {'micro':>5} {'compute_ms':>10} {'comm_ms':>9} {'contend_ms':>10} "
        f"{'step_ms':>9} {'measured_ms':>11} {'error':>7} {'speedup':>7} {'eff':>5}"
    )
    lines = []
    for configuration, group in frame.groupby("configuration", sort=False):
        lines += [f"configuration {configuration} (calibrated on {group['calibrated_on'].iloc[0]} ranks)", header]
        for p in group.itertuples():
            measured = f"{p.measured_step_time_ms:11.1f}" if p.measured else f"{'-':>11}"
            error = f"{p.error:+7.1%}" if p.measured and p.num_workers > 1 else f"{'':>7}"
            lines.append(
                f"{p.scaling:<7} {p.num_workers:>4} {p.nodes:>5} {p.micro_batch:>5} {p.compute_ms:>10.1f} "
                f"{p.comm_ms:>9.1f} {p.contention_ms:>10.1f} {p.step_time_ms:>9.1f} {measured} {error} "
                f"{p.speedup:>7.2f} {p.efficiency:>5.2f}{' *' if p.extrapolated else ''}"
            )
    reasons = sorted({r for text in frame["extrapolation"].dropna() for r in text.split("; ")})
    if reasons:
        lines.append(f"* extrapolated: {'; '.join(reasons)}")
    return "\n".join(lines)


def holdout_lines(frame: pd.DataFrame) -> str:
    """The held-out predictions (``holdout``) as text, with ``holdout_summary``; "" where there are none."""
    if frame.empty:
        return ""
    lines = [f"{'scaling':<7} {'N':>4} {'from':>9} {'micro':>5} {'step_ms':>9} {'measured_ms':>11} {'error':>7}"]
    for p in frame.itertuples():
        lines.append(
            f"{p.scaling:<7} {p.num_workers:>4} {p.calibrated_on:>9} {p.micro_batch:>5} {p.step_time_ms:>9.1f} "
            f"{p.measured_step_time_ms:>11.1f} {p.error:>+7.1%}"
        )
    return (
        "held out (each count predicted from the smaller ones only):\n"
        + "\n".join(lines)
        + (f"\n{holdout_summary(frame)}")
    )


def worst_by_calibration(rows: list[dict]) -> list[tuple[str, list[dict], dict]]:
    """Validation rows (each with an ``error``) grouped by the counts that calibrated them, the most counts first:
    (``calibrated_on``, its rows, its row of the largest absolute error). Rows without the column form one group,
    ``""``."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        calibrated_on = r.get("calibrated_on")
        groups.setdefault("" if calibrated_on is None else str(calibrated_on), []).append(r)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[0].split(",")), kv[0]))
    return [(c, group, max(group, key=lambda r: abs(r["error"]))) for c, group in ordered]


def validation_line(summary: Path = VALIDATION_SUMMARY) -> str:
    """Where the predictor was checked against measurement and its worst error there, from the committed summary
    (its held-out rows where it marks them), per set of counts it was calibrated on, the most counts first;
    "" where there is none."""
    if not summary.is_file():
        return ""
    rows = pd.read_csv(summary, dtype={"calibrated_on": str}).dropna(subset=["error"])
    if "held_out" in rows.columns and rows["held_out"].eq(True).any():
        rows, which = rows[rows["held_out"].eq(True)], "held-out "
    else:
        which = ""
    if rows.empty:
        return ""
    parts = []
    for calibrated_on, group, worst in worst_by_calibration(rows.to_dict("records")):
        counts = sorted({r["num_workers"] for r in group})
        at = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        parts.append(
            f"{worst['error']:+.1%} of {len(group)} at {at} ranks"
            + (f" from {calibrated_on}" if calibrated_on else "")
            + f" ({worst['run']}, {worst['scaling']}, {worst['num_workers']} ranks)"
        )
    where = f" ({rows['host'].iloc[0]})" if "host" in rows.columns else ""
    return f"validated against measurement: {summary.parent.name}{where}, worst {which}error " + "; ".join(parts)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = ArgumentParser(prog="python -m analysis.predict", description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep_dir", metavar="SWEEP", help="a sweep directory with completed 1-rank trials")
    parser.add_argument("--nodes", type=int, required=True, help="nodes M")
    parser.add_argument("--gpus-per-node", type=int, required=True, help="ranks per node G")
    parser.add_argument("--link", default=None, help=f"{' | '.join(NAMED_LINKS)} | a links.parquet")
    parser.add_argument("--intra-link", default=None, help="the link within a node, likewise")
    parser.add_argument("--slowest", type=float, default=1.0, help="slowest rank's compute over the others' (1)")
    parser.add_argument("--out", default=None, help="where to write (default: <SWEEP>/report/predictions.parquet)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return run_command(predict_command, argv, bad_input=(OSError,))


def predict_command(argv: list[str] | None) -> int:
    args = parse_args(argv)
    table = predict_scaling(args.sweep_dir, args.nodes, args.gpus_per_node, args.link, args.intra_link, args.slowest)
    out = Path(args.out) if args.out else Path(args.sweep_dir) / "report" / "predictions.parquet"
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out)
    print(prediction_lines(table))
    try:
        held = holdout_lines(sweep_holdout(args.sweep_dir, args.link, args.intra_link, args.slowest))
    except AnalysisError as exc:
        held = f"no held-out check: {exc}"
    for text in (held, validation_line()):
        if text:
            print(text)
    print(f"predictions: {out} (every row a prediction; measured_* where the sweep ran it; extrapolated and why)")
    return 0


if __name__ == "__main__":
    exit_process(main())
