"""``python -m raysweep.probe``: time the cluster's collectives and fit a latency and a bandwidth per link class.

Writes ``<results-dir>/<name>/links/links.parquet`` (``raysweep.core.schema.LINKS_COLUMNS``: the timed points
and the fits) and prints the fits; ``python -m analysis.predict SWEEP --link <that file>`` predicts with it.
A sweep run with ``--probe-links`` runs the same probe on its cluster before its trials, into its own directory.
With a ``CoupledPlan`` (``ProbeOptions.coupled``) it also times the trial's bucketed all-reduce while the ranks
compute (``trainers.coupled_probe``), on the intra-node group: the table's ``coupled`` rows, from which the model
takes the ranks' coupling where no multi-rank trial calibrates it (``analysis.prediction.coupling``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import ray

from analysis.prediction.link_model import fit_rows
from raysweep.core.command import ArgumentParser, byte_size, exit_process, run_command
from raysweep.core.errors import UsageError
from raysweep.core.names import unknown_name
from raysweep.core.schema import table_from_rows
from raysweep.core.store import ResultStore, atomic_write_table
from raysweep.results.text_table import format_table
from raysweep.runtime import cluster
from raysweep.runtime.capacity import Capacity
from raysweep.runtime.links import probe_groups, run_probe_group
from raysweep.runtime.ray_logs import plain_log_output, quiet_forwarded_logs
from raysweep.runtime.train_run import start_train_coordinator
from trainers.coupled_probe import CoupledPlan
from trainers.link_probe import COLLECTIVES, ProbePlan

DEVICES = ("auto", "cpu", "gpu")
# The probe's own directory under the results directory, laid out as a sweep's: <name>/links/links.parquet.
# (Not "links": that would read links/links/links.parquet.) ``--name SWEEP`` writes into that sweep instead.
DEFAULT_NAME = "probe"


@dataclass(frozen=True)
class ProbeOptions:
    """What the probe measures and where it writes; checked once by ``check``."""

    results_dir: str = "./raysweep-results"
    name: str = DEFAULT_NAME
    address: str | None = None
    num_cpus: int = 0  # a local Ray's CPUs; 0: this machine's
    device: str = "auto"
    cpus_per_worker: float = 1.0
    max_ranks: int = 8
    plan: ProbePlan = field(default_factory=ProbePlan)
    collective_timeout_s: int = 600
    coupled: CoupledPlan | None = None  # the coupled probe's load and buckets; None: the link probe alone

    def check(self) -> None:
        if self.device not in DEVICES:
            raise UsageError(f"--device: {unknown_name('device', self.device, DEVICES)}")
        if self.max_ranks < 2:
            raise UsageError(f"max-ranks must be 2 or more, not {self.max_ranks}")
        if self.cpus_per_worker <= 0:
            raise UsageError(f"cpus-per-worker must be positive, not {self.cpus_per_worker}")
        if not 0 < self.plan.min_bytes <= self.plan.max_bytes:
            raise UsageError(f"need 0 < min-bytes <= max-bytes, not {self.plan.min_bytes} and {self.plan.max_bytes}")
        if self.plan.repeats < 1 or self.plan.warmup < 0:
            raise UsageError(
                f"repeats must be 1 or more and warmup 0 or more, not {self.plan.repeats}, {self.plan.warmup}"
            )
        unknown = set(self.plan.collectives) - set(COLLECTIVES)
        if unknown:
            raise UsageError(f"--collectives: {unknown_name('collective', sorted(unknown)[0], COLLECTIVES)}")
        if self.coupled is not None and not (self.coupled.bucket_bytes and self.coupled.micro_batch >= 1):
            raise UsageError("the coupled probe needs a micro batch of 1 or more and at least one gradient bucket")


def links_path(store: ResultStore) -> Path:
    return store.table_dir("links") / "links.parquet"


def probe_connected(options: ProbeOptions, store: ResultStore) -> pa.Table:
    """On the cluster Ray is connected to: run every probe group, fit, write ``links.parquet``; the table."""
    device = options.device
    if device == "auto":
        device = "gpu" if ray.cluster_resources().get("GPU") else "cpu"
    groups = probe_groups(Capacity.of_cluster(), device, options.cpus_per_worker, options.max_ranks)
    if not groups:
        raise UsageError(
            f"the cluster holds fewer than 2 {device} ranks of {options.cpus_per_worker:g} CPU on any node and across"
            " nodes: nothing to probe"
        )
    storage = str(Path(store.root, "_ray").resolve())
    start_train_coordinator()  # once, before the groups' runs: each would otherwise wait for its start
    points = []
    for group in groups:
        print(f"link probe: {group.link_class}, {group.ranks} ranks ({group.placement_strategy})", flush=True)
        points += run_probe_group(
            group, options.plan, device, options.cpus_per_worker, storage, options.collective_timeout_s, store.sweep
        )
    intra = [g for g in groups if g.link_class == "intra_node"]
    if options.coupled is not None and intra:  # the coupling is a host's: its ranks computing beside their reduce
        print(f"coupled probe: {options.coupled.model}, {intra[0].ranks} ranks", flush=True)
        points += run_probe_group(
            intra[0],
            options.coupled,
            device,
            options.cpus_per_worker,
            storage,
            options.collective_timeout_s,
            store.sweep,
        )
    fits = fit_rows(points)
    table = table_from_rows("links", [{"sweep": store.sweep, **row} for row in points + fits])
    atomic_write_table(links_path(store), table)
    return table


# A sweep's own probe stops at 64 MiB on CPU ranks: gloo's bandwidth is fitted well below it, and buffers up
# to 1 GiB would add minutes to every CPU sweep. On GPUs it probes the full range.
CPU_SWEEP_MAX_BYTES = 64 << 20


def probe_sweep_links(store: ResultStore) -> pa.Table:
    """``--probe-links``: the probe on the sweep's connected cluster before any trial holds it, into the sweep's
    own ``links/links.parquet`` (the report's predictions and ``python -m analysis.predict`` read it there)."""
    plan = ProbePlan() if ray.cluster_resources().get("GPU") else ProbePlan(max_bytes=CPU_SWEEP_MAX_BYTES)
    table = probe_connected(ProbeOptions(results_dir=str(store.root.parent), name=store.sweep, plan=plan), store)
    print(fit_lines(table), flush=True)
    return table


def fit_lines(table: pa.Table) -> str:
    """The fits as a text table: per link class and collective, latency in microseconds and bandwidth in GB/s."""
    header = ["link_class", "collective", "ranks", "alpha_us", "beta_GB_s", "fit_error"]
    rows = [
        [
            r["link_class"],
            r["collective"],
            str(r["ranks"]),
            f"{r['alpha_s'] * 1e6:.1f}",
            f"{r['beta_bytes_per_s'] / 1e9:.3f}",
            f"{r['fit_error']:.1%}",
        ]
        for r in table.to_pylist()
        if r["row"] == "fit"
    ]
    return format_table(header, rows)


def probe(options: ProbeOptions) -> pa.Table:
    """Start a local Ray (or join ``address``), probe, write the table, stop; the ``links`` table."""
    options.check()
    store = ResultStore(options.results_dir, options.name)
    if options.address:
        cluster.join(options.address)
    else:
        cluster.start_local(options.num_cpus or os.cpu_count() or 1, dashboard=False)
    plain_log_output()  # Ray's worker chatter stays in its log files, as a sweep's does
    quiet_forwarded_logs()
    try:
        return probe_connected(options, store)
    finally:
        cluster.shutdown()


def parse_args(argv: list[str] | None) -> ProbeOptions:
    parser = ArgumentParser(prog="python -m raysweep.probe", description=__doc__)
    parser.add_argument("--address", default=None, help="join this Ray cluster (default: start a local one)")
    parser.add_argument("--num-cpus", type=int, default=0, help="CPUs of a local Ray (default: this machine's)")
    parser.add_argument("--results-dir", default="./raysweep-results")
    parser.add_argument(
        "--name",
        default=DEFAULT_NAME,
        help="the directory under --results-dir (default: %(default)s); a sweep's name: its report predicts with it",
    )
    parser.add_argument("--device", default="auto", help="auto (GPU where the cluster has one) | cpu | gpu")
    parser.add_argument("--cpus-per-worker", type=float, default=1.0)
    parser.add_argument("--max-ranks", type=int, default=8, help="most ranks in one probe group (default 8)")
    sizes = "a byte count, or with a unit: 4096, 4KiB, 4kB, 1.5GiB"
    parser.add_argument("--min-bytes", type=byte_size, default=1 << 10, help=f"smallest buffer: {sizes} (default 1KiB)")
    parser.add_argument(
        "--max-bytes", type=byte_size, default=1 << 30, help="largest buffer (default 1GiB; memory caps it)"
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per point (default 5)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs before them (default 2)")
    parser.add_argument("--collectives", default=",".join(COLLECTIVES), help="comma-separated (default: all four)")
    args = parser.parse_args(argv)
    plan = ProbePlan(args.min_bytes, args.max_bytes, args.repeats, args.warmup, tuple(args.collectives.split(",")))
    return ProbeOptions(
        args.results_dir,
        args.name,
        args.address,
        args.num_cpus,
        args.device,
        args.cpus_per_worker,
        args.max_ranks,
        plan,
    )


def main(argv: list[str] | None = None) -> int:
    return run_command(probe_command, argv)


def probe_command(argv: list[str] | None) -> int:
    options = parse_args(argv)
    table = probe(options)
    print(fit_lines(table))
    print(f"links: {links_path(ResultStore(options.results_dir, options.name))}")
    return 0


if __name__ == "__main__":
    exit_process(main())
