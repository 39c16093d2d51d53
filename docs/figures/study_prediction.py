"""The study's question answered by the step-time model (docs/prediction.md), from
``docs/results/study-prediction/inputs.json``: ViT-B/16 on nodes of one T4-class GPU each over Ethernet, at the
paper's global batches (strong scaling). The per-rank compute from the model's training FLOPs a sample
(counted by ``trainers.measure.flops`` on the timm model the inputs name), the peak and the assumed MFU; the
fp32 gradient all-reduce on the named Ethernet links (``analysis.prediction.link_model``); the overlap at its
bounds, none and full. Each efficiency carries the range the validation's errors give
(``prediction_validation.validation``): the multi-node step time scaled as the measured steps were against their
predictions (measured = predicted / (1 + error)), the 1-node step the reference."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass

from analysis.prediction.link_model import INTRA_NODE, TCP_HOP_S, ethernet, uniform
from analysis.prediction.step_model import Engine, comm_s, step_s, step_traffic

from . import RESULTS, count, figure, table
from .prediction_validation import EXPERIMENT as VALIDATION
from .prediction_validation import validation

INPUTS = RESULTS / "study-prediction" / "inputs.json"
OVERLAPS = (("none", 0.0), ("full", 1.0))
HIGHEST_GBIT = 10_000.0  # the thresholds' search stops here: a statement not holding by then never holds


@functools.cache
def model_counts(model: str, image_size: int, num_classes: int) -> tuple[float, int]:
    """Training FLOPs a sample (``trainers.measure.flops``: 2 a multiply-add, 3 x forward) and trainable parameters."""
    import timm

    from trainers.measure.flops import training_flops_per_sample

    built = timm.create_model(model, num_classes=num_classes, img_size=image_size)
    return training_flops_per_sample(built), sum(p.numel() for p in built.parameters() if p.requires_grad)


@dataclass(frozen=True)
class Study:
    """The committed inputs with the model's counts beside them."""

    inputs: dict
    flops_per_sample: float
    trainable_params: int

    def __getitem__(self, key: str):
        return self.inputs[key]

    def compute_ms(self, micro_batch: float) -> float:
        return micro_batch * self.flops_per_sample / (self["peak_flops"] * self["mfu"]) * 1000.0

    def traffic(self):
        return step_traffic(Engine(self["engine"], grad_bytes=self["grad_bytes"]), self.trainable_params)

    def comm_ms(self, gbit: float, nodes: int) -> float:
        return comm_s(self.traffic(), ethernet(gbit), 1, nodes) * 1000.0

    def step_ms(self, batch: int, nodes: int, gbit: float, overlap: float) -> float:
        return step_s(self.compute_ms(batch / nodes), self.comm_ms(gbit, nodes), overlap)

    def efficiency(self, batch: int, nodes: int, gbit: float, overlap: float, scale: float = 1.0) -> float:
        """Strong-scaling efficiency, the multi-node step time multiplied by ``scale``."""
        return self.step_ms(batch, 1, gbit, overlap) / (nodes * scale * self.step_ms(batch, nodes, gbit, overlap))

    def intra_step_ms(self, batch: int, overlap: float) -> float:
        """Two GPUs of one node, the ring on the intra-node link."""
        links = uniform("pcie", INTRA_NODE, self["intra_node_hop_s"], self["intra_node_gbit"] * 1e9 / 8)
        return step_s(self.compute_ms(batch / 2), comm_s(self.traffic(), links, 2, 1) * 1000.0, overlap)


def study() -> Study:
    inputs = json.loads(INPUTS.read_text())
    flops, params = model_counts(inputs["model"], inputs["image_size"], inputs["num_classes"])
    return Study(inputs, flops, params)


def threshold_gbit(holds, low: float = 0.1, high: float = HIGHEST_GBIT) -> float:
    """The smallest link speed (Gbit/s) at which ``holds`` is true, by bisection on a log scale; inf if none."""
    if not holds(high):
        return math.inf
    for _ in range(60):
        mid = (low * high) ** 0.5
        low, high = (low, mid) if holds(mid) else (mid, high)
    return high


def gbit(value: float) -> str:
    return "never" if math.isinf(value) else f"{value:.1f}"


def with_range(s: Study, batch: int, nodes: int, link: float, overlap: float, scales: tuple[float, float]) -> str:
    """``e (low-high)``: the step time scaled by the validation's ``step_scales`` (the longer step gives the lower
    efficiency); above 1 is capped (no superlinear step)."""
    e = s.efficiency(batch, nodes, link, overlap)
    low = s.efficiency(batch, nodes, link, overlap, scales[1])
    high = min(1.0, s.efficiency(batch, nodes, link, overlap, scales[0]))
    return f"{e:.2f} ({low:.2f}-{high:.2f})"


def scales_text(scales: tuple[float, float]) -> str:
    return f"x{scales[0]:.2f} to x{scales[1]:.2f}"


@figure("study-prediction-validation")
def study_prediction_validation() -> str:
    v = validation()
    w = v.worst
    which = "held-out " if v.held_out else ""
    return (
        f"Each predicted efficiency carries a range: the multi-node step time scaled {scales_text(v.step_scales)}, "
        f"as the measured steps of the model's validation were against its {which}predictions (measured = predicted "
        f"/ (1 + error); `docs/results/{VALIDATION}/`, {len(v.rows)} {which}predictions on one host's CPU cores, the "
        f"worst {w['error']:+.1%}: {w['run']}, {w['scaling']} scaling at {w['num_workers']} ranks), the 1-node "
        "step the reference; a range's top is capped at 1.00. That validation ran on CPUs over gloo on one host: "
        "this cluster's T4s and Ethernet links are a device and links the model was never calibrated on, so every "
        "figure here is an extrapolation and its error may exceed the range."
    )


@figure("study-prediction-inputs")
def study_prediction_inputs() -> str:
    s = study()
    rows = []
    for key, value in s.inputs.items():
        if key.endswith("_source"):
            continue
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        rows.append([f"`{key}`", shown, s.inputs.get(f"{key}_source", "")])
        if key == "num_classes":
            rows += [
                [
                    "`flops_per_sample`",
                    f"{s.flops_per_sample / 1e9:.1f} GFLOP",
                    "counted: `trainers.measure.flops.training_flops_per_sample` of the model above",
                ],
                ["`trainable_params`", f"{s.trainable_params:,}", "counted: the model above's trainable parameters"],
            ]
        if key == "mfu":
            rate = s["peak_flops"] * s["mfu"] / s.flops_per_sample
            rows.append(["(implied)", f"{rate:.0f} samples/s", "a GPU's training rate these inputs give"])
    body = table(["input", "value", "source"], rows, "lll")
    return (
        f"{body}\n\nEthernet: line rate per direction, {TCP_HOP_S * 1e6:.0f} us per ring step (TCP, an assumption: "
        "`analysis.prediction.link_model.TCP_HOP_S`);\nline rate is an upper bound on what TCP delivers, so the "
        "communication here is a lower bound."
    )


@figure("study-prediction-efficiency")
def study_prediction_efficiency() -> str:
    s = study()
    scales = validation().step_scales
    nodes = [n for n in s["nodes"] if n > 1]
    parts = []
    for link in s["links_gbit"]:
        rows = [
            [str(batch), label]
            + [with_range(s, batch, n, link, overlap, scales) if batch % n == 0 else "-" for n in nodes]
            for batch in s["global_batches"]
            for label, overlap in OVERLAPS
        ]
        header = ["global batch", "overlap", *(f"{n} nodes" for n in nodes)]
        parts.append(f"### {link} GbE\n\n" + table(header, rows, "rl" + "r" * len(nodes)))
    return "\n\n".join(parts)


def halving_gbit(s: Study, batch: int, overlap: float, scale: float) -> float:
    """The link speed from which 2 nodes reach the halving efficiency, the 2-node step scaled by ``scale``."""
    return threshold_gbit(lambda g: s.efficiency(batch, 2, g, overlap, scale) >= s["halving_efficiency"])


def same_speed_gbit(s: Study, batch: int, overlap: float) -> float:
    """The link speed from which 2 nodes' step is within the tolerance of 2 GPUs of one node."""
    intra = s.intra_step_ms(batch, overlap) * (1 + s["same_speed_tolerance"])
    return threshold_gbit(lambda g: s.step_ms(batch, 2, g, overlap) <= intra)


@figure("study-prediction-statements")
def study_prediction_statements() -> str:
    s = study()
    scales = validation().step_scales
    rows = []
    for batch in s["global_batches"]:
        for label, overlap in OVERLAPS:
            at = " / ".join(with_range(s, batch, 2, g, overlap, scales) for g in s["links_gbit"])
            halving = [halving_gbit(s, batch, overlap, scale) for scale in (1.0, *scales)]
            first = f"{gbit(halving[0])} ({gbit(halving[1])}-{gbit(halving[2])})"
            rows.append([str(batch), label, at, first, gbit(same_speed_gbit(s, batch, overlap))])
    links = " / ".join(str(g) for g in s["links_gbit"])
    header = ["global batch", "overlap", f"2-node efficiency at {links} GbE", "1 holds from (Gbit/s)"]
    return (
        f"1. *About half the time from 1 to 2 GPUs* ({s.inputs['halving_efficiency_source']}).\n"
        f"2. *No significant difference between intra- and inter-node* ({s.inputs['same_speed_tolerance_source']}; "
        f"intra-node: {s.inputs['intra_node_gbit_source']}).\n\n"
        + table([*header, "2 holds from (Gbit/s)"], rows, "rllrr")
        + f"\n\nStatement 1's speed carries the range of the step time scaled {scales_text(scales)} (never: not below "
        f"{HIGHEST_GBIT:,.0f} Gbit/s). Statement 2 compares two of the model's predictions, the same GPUs' compute "
        "on either link, so it carries no range from the validation, which checked the step against measurement, "
        "not the difference between two links."
    )


@figure("study-prediction-reading")
def study_prediction_reading() -> str:
    s = study()
    link, batch = s["links_gbit"][0], max(s["global_batches"])
    megabytes = s.trainable_params * s["grad_bytes"] / 1e6
    return (
        "Read: below the speed in a row's last columns the statement fails for that batch and overlap. With no "
        f"overlap a {megabytes:.0f} MB fp32 all-reduce over {link} GbE takes {s.comm_ms(link, 2):.0f} ms between "
        f"{count(2)} nodes, against {s.compute_ms(batch / 2):.0f} ms of a T4's compute on a {batch // 2}-sample half "
        "batch in these inputs; with full overlap it hides under the backward pass only while it is shorter than "
        "the compute."
    )
