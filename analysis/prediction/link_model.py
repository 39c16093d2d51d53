"""Collective cost on a link: latency alpha and bandwidth beta per link class and collective.

The standard ring cost terms (Thakur, Rabenseifner and Gropp, "Optimization of collective communication
operations in MPICH", IJHPCA 2005; the same terms NCCL's tests use for their bus bandwidth): on ``p`` ranks
a collective over a buffer of ``n`` bytes takes

* all-reduce: ``2 (p - 1) alpha + 2 (p - 1) / p * n / beta``;
* reduce-scatter, all-gather, all-to-all: ``(p - 1) alpha + (p - 1) / p * n / beta``

(``n`` the full buffer: the input of a reduce-scatter, the output of an all-gather). A link's alpha and
beta are fitted to timed points by least squares on relative error (sizes span six orders of magnitude,
so the small messages' latency counts as much as the large ones' bandwidth). A named link is its
datasheet bandwidth and an assumed latency, each with its source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from analysis.rows.errors import AnalysisError
from raysweep.core.names import unknown_name

COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")
INTRA_NODE, INTER_NODE = "intra_node", "inter_node"
LINK_CLASSES = (INTRA_NODE, INTER_NODE)


def cost_terms(collective: str, ranks: int) -> tuple[float, float]:
    """(alpha multiplier, bytes-over-beta multiplier) of the ring algorithm on ``ranks`` ranks."""
    if collective not in COLLECTIVES:
        raise AnalysisError(unknown_name("collective", collective, COLLECTIVES))
    if ranks <= 1:
        return 0.0, 0.0
    steps = ranks - 1
    if collective == "all_reduce":
        return 2.0 * steps, 2.0 * steps / ranks
    return float(steps), steps / ranks


@dataclass(frozen=True)
class LinkFit:
    """One collective on one link class: ``time = a(p) alpha + b(p) n / beta`` (``cost_terms``)."""

    alpha_s: float
    beta_bytes_per_s: float

    def time_s(self, collective: str, nbytes: float, ranks: int) -> float:
        a, b = cost_terms(collective, ranks)
        return a * self.alpha_s + b * nbytes / self.beta_bytes_per_s


def fit_link(collective: str, ranks: list[int], nbytes: list[float], seconds: list[float]) -> LinkFit:
    """Alpha and beta that minimise the points' relative error; both kept non-negative."""
    terms = np.array([cost_terms(collective, p) for p in ranks])
    design = np.column_stack([terms[:, 0], terms[:, 1] * np.asarray(nbytes, dtype=float)])
    times = np.asarray(seconds, dtype=float)
    if len(times) < 2 or not np.all(times > 0) or not np.any(design[:, 1] > 0):
        raise AnalysisError(f"{collective}: a fit needs two or more timed points on 2 or more ranks")
    weighted = design / times[:, None]
    (alpha, inverse_beta), *_ = np.linalg.lstsq(weighted, np.ones(len(times)), rcond=None)
    if alpha < 0:  # bandwidth alone explains the points better: refit it without a latency
        alpha, inverse_beta = 0.0, float(np.linalg.lstsq(weighted[:, 1:], np.ones(len(times)), rcond=None)[0][0])
    if inverse_beta <= 0:  # latency alone: a link too fast to see in these sizes
        inverse_beta = 1e-15
        alpha = float(np.linalg.lstsq(weighted[:, :1], np.ones(len(times)), rcond=None)[0][0])
    return LinkFit(float(alpha), 1.0 / float(inverse_beta))


@dataclass(frozen=True)
class Links:
    """What a prediction needs of the network: a fit per (link class, collective), and where they came from."""

    name: str
    fits: dict[tuple[str, str], LinkFit] = field(default_factory=dict)
    measured: frozenset[str] = frozenset()  # the link classes whose fits a probe timed (the rest: datasheet figures)

    def fit(self, link_class: str, collective: str) -> LinkFit:
        found = self.fits.get((link_class, collective)) or self.fits.get((link_class, "all_reduce"))
        if found is None:
            raise AnalysisError(f"link table {self.name!r} has no {link_class} fit (it has {sorted(self.fits)})")
        return found

    def with_class(self, link_class: str, other: Links) -> Links:
        """These fits with ``other``'s fits of ``link_class`` in their place."""
        kept = {key: value for key, value in self.fits.items() if key[0] != link_class}
        taken = {key: value for key, value in other.fits.items() if key[0] == link_class}
        measured = (self.measured - {link_class}) | (other.measured & {link_class})
        return Links(f"{self.name}+{other.name}", {**kept, **taken}, measured)

    def classes_used(self, ranks_per_node: int, nodes: int) -> list[str]:
        """The link classes a collective over ``nodes`` x ``ranks_per_node`` ranks crosses (``collective_s``)."""
        return [c for c, used in ((INTRA_NODE, ranks_per_node > 1), (INTER_NODE, nodes > 1)) if used]

    def collective_s(self, collective: str, nbytes: float, ranks_per_node: int, nodes: int) -> float:
        """One collective over ``nodes`` x ``ranks_per_node`` ranks, hierarchically where both exceed one.

        Within a node a reduce-scatter, across the nodes the collective on each node's share, within the
        node an all-gather (NCCL's and Gloo's hierarchical all-reduce); a flat ring when either count is one.
        Every node sends its share through one link: the inter-node step carries the full buffer.
        """
        if nodes <= 1:
            return self.fit(INTRA_NODE, collective).time_s(collective, nbytes, ranks_per_node)
        inter = self.fit(INTER_NODE, collective).time_s(collective, nbytes, nodes)
        if ranks_per_node <= 1:
            return inter
        if collective == "all_reduce":
            intra = self.fit(INTRA_NODE, "reduce_scatter").time_s("reduce_scatter", nbytes, ranks_per_node)
            intra += self.fit(INTRA_NODE, "all_gather").time_s("all_gather", nbytes, ranks_per_node)
        else:
            intra = self.fit(INTRA_NODE, collective).time_s(collective, nbytes, ranks_per_node)
        return intra + inter


def uniform(name: str, link_class: str, alpha_s: float, bytes_per_s: float) -> Links:
    return Links(name, {(link_class, c): LinkFit(alpha_s, bytes_per_s) for c in COLLECTIVES})


GBIT = 1e9 / 8  # bytes per second in one Gbit/s
# Latency of one ring step over TCP sockets (Gloo, NCCL's socket transport): an assumption, tens of
# microseconds per hop as kernel TCP round trips measure on commodity Ethernet (no RDMA).
TCP_HOP_S = 30e-6
# Named links: line rate per direction and the latency of one ring step.
NAMED_LINKS: dict[str, tuple[str, float, float, str]] = {
    # NVIDIA H100 SXM datasheet: NVLink 4, 900 GB/s total bidirectional per GPU, so 450 GB/s per direction;
    # NCCL's intra-node step latency is a few microseconds (NCCL tests' small-message all-reduce).
    "nvlink4": (INTRA_NODE, 5e-6, 450e9, "NVIDIA H100 Tensor Core GPU datasheet (NVLink: 900 GB/s bidirectional)"),
    # NVIDIA ConnectX-7 / Quantum-2: InfiniBand NDR, 400 Gb/s per port; RDMA latency of a few microseconds.
    "ib_ndr400": (INTER_NODE, 5e-6, 400 * GBIT, "NVIDIA ConnectX-7 datasheet (InfiniBand NDR 400 Gb/s per port)"),
    # IEEE 802.3ba (40/100 GbE), 802.3by (25 GbE), 802.3ae (10 GbE): line rates per direction.
    "100gbe": (INTER_NODE, TCP_HOP_S, 100 * GBIT, "IEEE 802.3ba: 100 Gb/s Ethernet"),
    "25gbe": (INTER_NODE, TCP_HOP_S, 25 * GBIT, "IEEE 802.3by: 25 Gb/s Ethernet"),
    "10gbe": (INTER_NODE, TCP_HOP_S, 10 * GBIT, "IEEE 802.3ae: 10 Gb/s Ethernet"),
}


def named_link(name: str, link_class: str | None = None) -> Links:
    """A named link's constants, for its own class or ``link_class``."""
    if name not in NAMED_LINKS:
        raise AnalysisError(
            unknown_name("link", name, NAMED_LINKS, f"{', '.join(NAMED_LINKS)} or a links.parquet path")
        )
    own_class, alpha, beta, _source = NAMED_LINKS[name]
    return uniform(name, link_class or own_class, alpha, beta)


def ethernet(gbit_per_s: float) -> Links:
    """An Ethernet link between nodes at ``gbit_per_s`` line rate, TCP latency per hop."""
    return uniform(f"{gbit_per_s:g}gbe", INTER_NODE, TCP_HOP_S, gbit_per_s * GBIT)


def links_from_table(table: pa.Table, name: str = "measured") -> Links:
    """The fits of a links table (its ``row`` = "fit" rows): see ``raysweep.core.schema.LINKS_COLUMNS``."""
    fits = {}
    for row in table.to_pylist():
        if row["row"] == "fit" and row["beta_bytes_per_s"] and not math.isnan(row["beta_bytes_per_s"]):
            fits[(row["link_class"], row["collective"])] = LinkFit(row["alpha_s"], row["beta_bytes_per_s"])
    if not fits:
        raise AnalysisError(f"{name}: no fitted link in the table")
    return Links(name, fits, frozenset(link_class for link_class, _ in fits))


def fit_rows(points: list[dict]) -> list[dict]:
    """A fit row per (link class, collective) of the timed point rows (``LINKS_COLUMNS``), with its error."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for point in points:
        if point["row"] == "point" and point["ranks"] >= 2:
            groups.setdefault((point["link_class"], point["collective"]), []).append(point)
    rows = []
    for (link_class, collective), group in sorted(groups.items()):
        ranks = [p["ranks"] for p in group]
        nbytes = [p["bytes"] for p in group]
        seconds = [p["time_s"] for p in group]
        link = fit_link(collective, ranks, nbytes, seconds)
        errors = [abs(link.time_s(collective, n, r) / t - 1) for r, n, t in zip(ranks, nbytes, seconds)]
        rows.append(
            {
                "row": "fit",
                "link_class": link_class,
                "collective": collective,
                "ranks": max(ranks),
                "alpha_s": link.alpha_s,
                "beta_bytes_per_s": link.beta_bytes_per_s,
                "fit_error": float(np.median(errors)),
                "repeats": len(group),
            }
        )
    return rows
