"""Predicted strong and weak scaling beyond the measured worker counts: ``predict_scaling`` and its CLI.

    python -m analysis.predict SWEEP --nodes M --gpus-per-node G [--link NAME|links.parquet] [--intra-link ...]

Calibrated on the sweep's 1-rank trials (per-rank compute, ``analysis.step_model.ComputeCurve``) and a link
table (the sweep's ``links/links.parquet`` from the link probe, another probe's, or a named link), it predicts
each configuration's step time, throughput, speedup and efficiency for N ranks packed G to a node on up to M
nodes (``analysis.step_model``), beside what the sweep measured at the same N where it ran. Every row is a
prediction; ``measured_*`` columns hold the measurement where one exists.
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

from analysis.communication import step_key
from analysis.errors import AnalysisError
from analysis.link_model import INTER_NODE, INTRA_NODE, NAMED_LINKS, Links, links_from_table, named_link
from analysis.load import load_sweep
from analysis.step_model import ComputeCurve, Engine, comm_s, step_s, step_traffic
from raysweep.core.command import ArgumentParser, run_command
from raysweep.core.status import is_completed

LINKS_FILE = Path("links") / "links.parquet"
# Columns older tables (or tables built by hand) may lack: NULL there.
OPTIONAL_COLUMNS = ("comm_overlap", "comm_kernel_ms", "trainable_params")
PREDICT_BEYOND = 4  # the report predicts up to this many times the most ranks the sweep measured
NO_LINKS = f"the sweep has no link table ({LINKS_FILE}: --probe-links or python -m raysweep.probe)"
MISS_TOLERANCE = 0.15  # a prediction further than this from its measurement names the term it got wrong


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
    step_time_ms: float
    step_time_full_overlap_ms: float
    throughput: float
    speedup: float
    efficiency: float
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


def predict_point(
    calibration: Calibration, scaling: str, n: int, micro_batch: int, gpus_per_node: int, links: Links, slowest: float
) -> Prediction:
    nodes = math.ceil(n / gpus_per_node)
    per_node = min(n, gpus_per_node)
    compute = calibration.compute.at(micro_batch)
    traffic = step_traffic(calibration.engine, calibration.trainable_params)
    comm = comm_s(traffic, links, per_node, nodes) * 1000.0 if n > 1 else 0.0
    overlap = calibration.overlap if calibration.overlap is not None else 0.0
    step = step_s(compute, comm, overlap, slowest if n > 1 else 1.0)
    global_batch = micro_batch * calibration.engine.grad_accum * n
    return Prediction(
        configuration=calibration.configuration,
        scaling=scaling,
        num_workers=n,
        nodes=nodes,
        ranks_per_node=per_node,
        micro_batch=micro_batch,
        global_batch=global_batch,
        link=links.name,
        compute_ms=compute,
        compute_source=calibration.compute.source(micro_batch),
        comm_ms=comm,
        overlap=overlap,
        overlap_source=calibration.overlap_source,
        step_time_ms=step,
        step_time_full_overlap_ms=step_s(compute, comm, 1.0, slowest if n > 1 else 1.0),
        throughput=global_batch / step * 1000.0,
        speedup=float("nan"),
        efficiency=float("nan"),
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
    """Which term is further off: the collectives (against the profiled comm time) or the compute (the rest)."""
    if p.measured_comm_ms is None:
        return "compute or comm (no profiled comm time to tell)"
    measured_compute = p.measured_step_time_ms - p.measured_comm_ms * (1.0 - p.overlap)
    comm_off = p.comm_ms * (1.0 - p.overlap) - p.measured_comm_ms * (1.0 - p.overlap)
    compute_off = p.compute_ms - measured_compute
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
) -> pd.DataFrame:
    """The predictions for a trials table (completed trials, the sweep's columns); one row per ``Prediction``.

    ``overlap``: a fixed share in place of the measured one (0: the bound of none, 1: full), so that a
    prediction rests on the 1-rank trials and the link table alone.
    """
    if nodes < 1 or gpus_per_node < 1:
        raise AnalysisError(f"nodes and gpus-per-node must be 1 or more, not {nodes} and {gpus_per_node}")
    trials = trials[trials["status"].map(is_completed)] if "status" in trials.columns else trials
    optional = {c: float("nan") for c in OPTIONAL_COLUMNS if c not in trials.columns}
    trials = trials.assign(configuration=trials.apply(configuration_key, axis=1), **optional)
    counts = worker_counts(nodes, gpus_per_node, {int(n) for n in trials["num_workers"]})
    rows = []
    for calibration in calibrations(trials, trainable_params):
        if overlap is not None:
            calibration = replace(calibration, overlap=overlap, overlap_source="given")
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
    return Links(given.name if base.name.endswith(given.name) else base.name, base.fits)


def report_predictions(sweep_dir: Path, trials: pd.DataFrame) -> pd.DataFrame:
    """The predictions a sweep's report shows: ``predict_from_trials`` over its own link table, one node of up to
    ``PREDICT_BEYOND`` x the most ranks measured; ``AnalysisError`` where there is no link table or nothing to
    calibrate on."""
    if not (sweep_dir / LINKS_FILE).is_file():
        raise AnalysisError(NO_LINKS)
    most_ranks = PREDICT_BEYOND * int(trials["num_workers"].max())
    return predict_from_trials(trials, resolve_links(sweep_dir, None, None), 1, most_ranks)


def predict_scaling(
    sweep_dir: str | Path,
    nodes: int,
    gpus_per_node: int,
    link: str | None = None,
    intra_link: str | None = None,
    slowest: float = 1.0,
) -> pa.Table:
    """Predicted scaling of a sweep's configurations on ``nodes`` x ``gpus_per_node`` ranks, as a table.

    ``link``: a named link (``analysis.link_model.NAMED_LINKS``) or a links.parquet, for its own class (a named
    Ethernet or InfiniBand link is the inter-node one); ``intra_link`` likewise for within a node; the sweep's
    own probe (``links/links.parquet``) fills what they leave. ``slowest``: the slowest rank's compute over the
    others'. Raises ``AnalysisError`` on unusable input.
    """
    data = load_sweep(sweep_dir)
    links = resolve_links(Path(sweep_dir), link, intra_link)
    frame = predict_from_trials(data.trials, links, nodes, gpus_per_node, slowest)
    return pa.Table.from_pandas(frame, preserve_index=False)


def prediction_lines(table: pa.Table) -> str:
    """The predictions as a text table, one line per configuration series and worker count."""
    frame = table.to_pandas()
    header = (
        f"{'scaling':<7} {'N':>4} {'nodes':>5} {'micro':>5} {'compute_ms':>10} {'comm_ms':>9} "
        f"{'step_ms':>9} {'measured_ms':>11} {'error':>7} {'speedup':>7} {'eff':>5}"
    )
    lines = []
    for configuration, group in frame.groupby("configuration", sort=False):
        lines += [f"configuration {configuration}", header]
        for p in group.itertuples():
            measured = f"{p.measured_step_time_ms:11.1f}" if p.measured else f"{'-':>11}"
            error = f"{p.error:+7.1%}" if p.measured and p.num_workers > 1 else f"{'':>7}"
            lines.append(
                f"{p.scaling:<7} {p.num_workers:>4} {p.nodes:>5} {p.micro_batch:>5} {p.compute_ms:>10.1f} "
                f"{p.comm_ms:>9.1f} {p.step_time_ms:>9.1f} {measured} {error} {p.speedup:>7.2f} {p.efficiency:>5.2f}"
            )
    return "\n".join(lines)


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
    print(f"predictions: {out} (every row a prediction; measured_* where the sweep ran it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
