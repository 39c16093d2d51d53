"""Validate the step-time model on a 16-core host (CPU ranks over gloo): calibrate on the 1- and 2-rank trials and
the link probe (and the coupled probe at 4 and 8 ranks), then predict strong and weak scaling at 4 and 8 ranks held
out and compare with measurement.

    python docs/results/cpu16-prediction/validate.py [--case NAME] [--smoke] [--probe-only] [--from DIR] [OUT]

Two cases (``CASES``), each its own call with ``--case`` (one call fits in 9 minutes; without ``--case`` both run):

* ``vit-micro``, where communication is a small share of the step: ViT micro (0.46 M parameters, a 1.8 MB
  all-reduce) over 64 tokens a sample at micro batches of 16-128;
* ``vit-ti``, where it is a larger share: ViT-Ti/16 at 32 px (5.5 M parameters, a
  22 MB all-reduce) over 5 tokens a sample at micro batches of 4-32.

Each case: the link probe (``python -m raysweep.probe``'s API: all-reduce, the only collective fp32 DDP runs, on
2, 4 and 8 ranks from 1 KiB to 64 MiB) with its coupled probe (``trainers.coupled_probe``: the case's model at the
weak micro batch as the load, DDP's gradient buckets all-reduced beside its backward pass, on 2, 4 and 8 ranks),
1-rank trials at every micro batch a rank runs, then strong (global batch
fixed) and weak (micro batch fixed) scaling at 2, 4 and 8 ranks, two seeds each, one trial at a time, every rank
one CPU (8 ranks hold half the cores, leaving the rest to gloo's threads and Ray). The model
(``analysis.prediction.predict.predict_from_trials``) is calibrated on the 1- and 2-rank trials only
(``calibrate_on``): the compute from 1 rank, the contention share at 2 ranks from 2; 4 and 8 ranks are held out,
their contention share extrapolated from 2 (``1,2``) or, the same trials with the coupled probe, the probe's at 4
and 8 (``1,2+probe``); and on 1, 2 and 4 predicting 8. It writes
``OUT/summary.csv`` (a case's rows replace that case's earlier rows, so the two calls build one table): per case,
scaling and N the terms, the predicted step, the measured median with its spread over the seeds, the error, whether
N was held out, and beyond 15% the term further off (compute, or comm against the profiled ``comm_kernel_ms``);
then it prints the table and the worst held-out error, and its wall time last.

Beside the summary it saves what it measured, ``trials-<case>.csv`` and ``links-<case>.csv``;
``--from DIR`` predicts again from those (no trial, no probe): the model as the code now has it, on the same
measurements. ``--probe-only --from DIR`` runs the probes again (the link probe and the coupled probe) and predicts
from them with the trials saved in ``DIR``.

``--smoke`` runs the same steps at the smallest scale (1 and 2 ranks on 2 CPUs, one seed, tiny batches, 10 steps a
trial, buffers to 1 MiB; 2 ranks predicted from 1): a check that the script runs against the code, not a validation.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import raysweep
from analysis.prediction.coupling import bucket_bytes, coupled_from_table, probed_shares
from analysis.prediction.link_model import links_from_table
from analysis.prediction.predict import predict_from_trials
from analysis.prediction.step_model import Engine
from raysweep.core.store import ResultStore
from raysweep.probe import ProbeOptions, fit_lines, links_path, probe
from trainers.coupled_probe import NUM_CLASSES, CoupledPlan
from trainers.link_probe import ProbePlan

COLUMNS = [
    "run",
    "host",
    "model",
    "scaling",
    "num_workers",
    "micro_batch",
    "calibrated_on",
    "held_out",
    "compute_ms",
    "comm_ms",
    "contention_share",
    "contention_source",
    "contention_ms",
    "step_time_ms",
    "step_time_full_overlap_ms",
    "measured_step_time_ms",
    "measured_min_ms",
    "measured_max_ms",
    "measured_comm_ms",
    "error",
    "missed_term",
]


@dataclass(frozen=True)
class Case:
    """One model at one shape: what it trains, the ranks, the batches, the seeds and the probe."""

    name: str
    model: str
    image_size: int
    ranks: list[int]  # strong and weak scaling's worker counts
    strong_global_batch: int
    weak_micro_batch: int
    seeds: list[int]
    train_samples: int
    probe: ProbePlan
    coupled: Coupled
    steps_per_epoch: int = 24  # 2 warm-up steps, the timed ones, then the profiled window that records comm_kernel_ms

    @property
    def one_rank_micro_batches(self) -> list[int]:
        """Every micro batch a strong- or weak-scaling rank runs, and the strong series' 1-rank base."""
        strong = {self.strong_global_batch // n for n in [1, *self.ranks]}
        return sorted(strong | {self.weak_micro_batch})

    @property
    def calibrations(self) -> list[tuple[set[int], bool]]:
        """The counts the model is calibrated on, each leaving the larger ones to hold out, and whether the coupled
        probe gives the contention at those: 1 rank (the compute) and each multi-rank count but the largest in turn
        (the contention): {1, 2} holds out 4 and 8, {1, 2, 4} holds out 8 (1 rank alone where there is one
        multi-rank count); the smallest of them again with the probe."""
        counts = [{1, *self.ranks[:k]} for k in range(len(self.ranks))][-max(1, len(self.ranks) - 1) :]
        return [(c, False) for c in counts] + [(counts[0], True)]

    def coupled_plan(self) -> CoupledPlan:
        """The coupled probe of this case: its model at the weak micro batch, fp32 DDP's gradient buckets."""
        from trainers.model.models import create_model

        params = sum(p.numel() for p in create_model(self.model, NUM_CLASSES, self.image_size).parameters())
        return CoupledPlan(
            self.model,
            self.image_size,
            self.weak_micro_batch,
            bucket_bytes(Engine("ddp"), params),
            steps=self.coupled.steps,
            repeats=self.coupled.repeats,
            warmup=self.coupled.warmup,
            counts=tuple(self.ranks),
        )


@dataclass(frozen=True)
class Coupled:
    """How long the coupled probe times each count: steps back to back, timed runs, untimed runs before."""

    steps: int = 10
    repeats: int = 5
    warmup: int = 2


PROBE = ProbePlan(max_bytes=64 << 20, repeats=7, collectives=("all_reduce",))
CASES = {
    "vit-micro": Case("vit-micro", "vit_micro_patch4_32", 32, [2, 4, 8], 128, 32, [0, 1], 4096, PROBE, Coupled()),
    "vit-ti": Case("vit-ti", "vit_tiny_patch16_224", 32, [2, 4, 8], 32, 8, [0, 1], 4096, PROBE, Coupled()),
}
SMOKE = Case(
    "smoke",
    "vit_micro_patch4_32",
    32,
    [2],
    16,
    16,
    [0],
    256,
    ProbePlan(max_bytes=1 << 20, repeats=2, warmup=1, collectives=PROBE.collectives),
    Coupled(steps=2, repeats=1, warmup=1),
    # the least that still profiles: 2 warm-up, trainers.epoch_plan.MIN_TIMED_STEPS (5) timed, 3 profiled
    steps_per_epoch=10,
)
PROBED = "+probe"  # marks a calibration whose contention at the held-out counts is the coupled probe's


def common(case: Case) -> dict:
    return {
        "model": case.model,
        "image_size": case.image_size,
        "dataset": "synthetic",
        "device": "cpu",
        "cpus_per_worker": 1,
        "engine": "ddp",
        "precision": "fp32",
        "epochs": 1,
        "train_samples": case.train_samples,
        "max_steps_per_epoch": case.steps_per_epoch,
        "warmup_steps": 2,
        "checkpoint_every": 0,
    }


def grids(case: Case) -> list[dict[str, list]]:
    """The sweep's three grids (one sweep: one Ray start, each worker count's group shared by its trials): 1 rank at
    every micro batch, strong and weak scaling. Weak scaling skips a count whose micro batch strong scaling already
    runs there (the same per-rank step: the prediction's measurement is found by configuration, count and micro
    batch, not by grid)."""
    weak_ranks = [n for n in case.ranks if case.strong_global_batch // n != case.weak_micro_batch]
    fixed, per_worker = {"data_scaling": ["fixed"]}, {"data_scaling": ["per_worker"]}
    one_rank = {"num_workers": [1], "micro_batch_per_worker": case.one_rank_micro_batches} | fixed
    strong = {"num_workers": case.ranks, "global_batch": [case.strong_global_batch]} | fixed
    weak = {"num_workers": weak_ranks, "micro_batch_per_worker": [case.weak_micro_batch]} | per_worker
    return [grid | {"seed": case.seeds} for grid in (one_rank, strong, weak) if grid["num_workers"]]


def run(out: Path, case: Case, cpus: int, trials_from: Path | None = None) -> pd.DataFrame:
    """The case's probe and sweep under ``out/<case>``; its summary rows (``COLUMNS``). ``trials_from``: the probe
    alone, the trials read from that directory's ``trials-<case>.csv`` (``--probe-only``)."""
    root = out / case.name
    links = probe(
        ProbeOptions(
            results_dir=str(root),
            name="links",
            num_cpus=cpus,
            device="cpu",
            max_ranks=max(case.ranks),
            plan=case.probe,
            coupled=case.coupled_plan(),
        )
    )
    print(fit_lines(links), flush=True)
    for point in coupled_from_table(links):
        print(f"coupled probe: {point} share {point.probed_share:.3f}", flush=True)
    if trials_from is None:
        result = raysweep.run_sweep(
            {"description": f"cpu16 prediction check: {case.name}", "fixed": common(case), "axes": grids(case)},
            results_dir=root,
            name="trials",
            max_concurrent_trials=1,  # one trial at a time: a trial's ranks have the host to themselves
            dashboard=False,
            report=False,
        )
        trials = result.trials.to_pandas()
    else:
        trials = measured_in(trials_from, case)[0].drop(columns="host_cpus")
    measured = trials.assign(host_cpus=os.cpu_count())
    link_rows = pq.read_table(links_path(ResultStore(root, "links"))).to_pandas()
    # what was measured, beside the summary: a later model is checked against the same trials and probe
    measured.to_csv(out / f"trials-{case.name}.csv", index=False)
    link_rows.to_csv(out / f"links-{case.name}.csv", index=False)
    measured, link_rows = measured_in(out, case)  # as --from reads them, so both give the same rows
    return predicted(case, measured, link_rows)


def predicted(case: Case, measured: pd.DataFrame, link_rows: pd.DataFrame) -> pd.DataFrame:
    """The case's summary rows (``COLUMNS``): per calibration (``Case.calibrations``) the counts it holds out,
    predicted from the others (and the coupled probe, where it says so) and against the measurement."""
    table = pa.Table.from_pandas(link_rows)
    link_table = links_from_table(table, "probe")
    probed = probed_shares(coupled_from_table(table))
    rows = []
    for calibrate_on, with_probe in case.calibrations:
        if with_probe and not probed:  # measured before the coupled probe: no such calibration
            continue
        frame = predict_from_trials(
            measured,
            link_table,
            nodes=1,
            gpus_per_node=max(case.ranks),
            overlap=0.0,
            calibrate_on=calibrate_on,
            probed=probed if with_probe else (),
        )
        if with_probe:
            frame = frame.assign(calibrated_on=frame["calibrated_on"] + PROBED)
        kept = frame[frame["measured"] & ~frame["num_workers"].isin(calibrate_on)]
        rows.append(
            kept[
                ((kept["scaling"] == "strong") & (kept["global_batch"] == case.strong_global_batch))
                | ((kept["scaling"] == "weak") & (kept["micro_batch"] == case.weak_micro_batch))
            ]
        )
    kept = pd.concat(rows, ignore_index=True).assign(
        run=case.name, host=f"{int(measured['host_cpus'].iloc[0])} CPU cores, gloo", model=case.model, held_out=True
    )
    return kept[COLUMNS].sort_values(["calibrated_on", "scaling", "num_workers"]).reset_index(drop=True)


def measured_in(directory: Path, case: Case) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The trials and the probe ``run`` saved for ``case`` under ``directory``."""
    return pd.read_csv(directory / f"trials-{case.name}.csv"), pd.read_csv(directory / f"links-{case.name}.csv")


def merged(path: Path, rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` in place of the same runs' rows of the summary at ``path`` (where there is one)."""
    if not path.is_file():
        return rows
    earlier = pd.read_csv(path)
    return pd.concat([earlier[~earlier["run"].isin(rows["run"])], rows], ignore_index=True)


def worst_line(summary: pd.DataFrame) -> str:
    held = summary[summary["held_out"].eq(True)].dropna(subset=["error"])
    if held.empty:
        return "no held-out prediction"
    worst = held.loc[held["error"].abs().idxmax()]
    return (
        f"worst held-out error {worst['error']:+.1%} ({worst['run']}, {worst['scaling']}, "
        f"{worst['num_workers']} ranks from {worst['calibrated_on']}; term further off: {worst['missed_term'] or '-'})"
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    smoke = "--smoke" in argv
    argv = [a for a in argv if a != "--smoke"]
    chosen = list(CASES)
    if "--case" in argv:
        at = argv.index("--case")
        name = argv[at + 1] if at + 1 < len(argv) else ""
        if name not in CASES:
            print(f"validate: --case must be one of {', '.join(CASES)}, not {name!r}", file=sys.stderr)
            return 2
        chosen, argv = [name], argv[:at] + argv[at + 2 :]
    probe_only = "--probe-only" in argv
    argv = [a for a in argv if a != "--probe-only"]
    measurements = None
    if "--from" in argv:
        at = argv.index("--from")
        measurements, argv = Path(argv[at + 1]), argv[:at] + argv[at + 2 :]
    cases = [SMOKE] if smoke else [CASES[name] for name in chosen]
    out = Path(argv[0] if argv else os.environ.get("OUT", "/tmp/cpu16-prediction"))
    started = time.monotonic()
    if probe_only and measurements is not None:  # the probes again, the trials measured before
        rows = pd.concat([run(out, case, 2 if smoke else 16, measurements) for case in cases], ignore_index=True)
    elif measurements is not None:  # the model again, on trials and a probe measured before
        rows = pd.concat([predicted(case, *measured_in(measurements, case)) for case in cases], ignore_index=True)
    else:
        rows = pd.concat([run(out, case, 2 if smoke else 16) for case in cases], ignore_index=True)
    out.mkdir(parents=True, exist_ok=True)
    summary = merged(out / "summary.csv", rows)
    summary.to_csv(out / "summary.csv", index=False, float_format="%.4g")
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(summary.drop(columns=["host", "model"]).round(3).to_string(index=False))
    print(f"summary: {out / 'summary.csv'}; {worst_line(summary)}; {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
