"""Resolution against model parallelism: peak memory per rank and throughput per GPU against the tokens per
image, one line per split (SP or TP degree, engine) and checkpointing setting, where each line's memory edge
falls and the largest image side that fits (the ``scientific`` and ``model_parallel`` spaces' rule).

A line is the trials that differ only in resolution.  Its edge lies between the most tokens that trained and
the fewest that ran out of memory (trials of status ``oom``, read from the sweep's trials table: they are not
among the completed trials the rest of the analysis sees).  Tokens per image are the patch tokens,
``(image_size / patch)^2``, with the patch size and native resolution read from the timm name
(``vit_base_patch16_224``); prefix tokens (class, registers) are left out, one or a few in thousands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from analysis.report.render import Block, Bullets, Heading, Paragraph, Table
from analysis.rows.load import SweepData, read
from raysweep.core.status import TrialStatus

# a line's identity: what besides the resolution tells trials apart here
LINE_KEYS = (
    "model",
    "engine",
    "tensor_parallel",
    "sequence_parallel",
    "activation_checkpointing",
    "micro_batch_per_worker",
)
MODEL_PATCH = re.compile(r"patch(\d+)_(\d+)")


def patch_tokens(model: str, image_size: int) -> int | None:
    """``(image_size / patch)^2`` for a timm ViT name carrying ``patch<P>_<native size>``; None for other names."""
    found = MODEL_PATCH.search(str(model))
    if not found:
        return None
    patch, native = int(found.group(1)), int(found.group(2))
    return (int(image_size or native) // patch) ** 2


@dataclass(frozen=True)
class ResolutionLine:
    """One SP degree's trials by tokens per image (medians over repeats); ``out_of_memory``: the token counts
    that ran out."""

    label: str
    points: pd.DataFrame  # tokens, image_size, peak_mem_gib, throughput_per_gpu
    out_of_memory: tuple[int, ...]

    @property
    def edge(self) -> str:
        """Where memory ran out, in words."""
        trained = int(self.points["tokens"].max()) if len(self.points) else None
        failed = min((t for t in self.out_of_memory if trained is None or t > trained), default=None)
        if trained is None:
            return f"{self.label}: out of memory at every resolution tried (from {failed:,} tokens per image)"
        side = int(self.points.loc[self.points["tokens"].idxmax(), "image_size"])
        if failed is None:
            return (
                f"{self.label}: every resolution trained (up to {trained:,} tokens per image, {side} px): "
                "no memory edge"
            )
        return (
            f"{self.label}: largest side that fits {side} px; the memory edge lies between {trained:,} tokens per "
            f"image (trained) and {failed:,} (out of memory)"
        )


def line_label(key: tuple) -> str:
    model, engine, tp, sp, checkpointing, micro = key
    every = "off" if not checkpointing else ("every block" if checkpointing == 1 else f"every {checkpointing}th block")
    split = f"TP {tp}" if tp > 1 else f"SP {sp}"
    return f"{split}, checkpointing {every} ({model}, {engine or 'engine not recorded'}, micro batch {micro})"


def with_tokens(trials: pd.DataFrame) -> pd.DataFrame:
    trials = trials.copy()
    for column, default in (
        ("sequence_parallel", 1),
        ("tensor_parallel", 1),
        ("activation_checkpointing", 0),
        ("image_size", 0),
    ):
        trials[column] = trials[column].fillna(default).astype(int) if column in trials else default
    trials["engine"] = trials["engine"].fillna("") if "engine" in trials else ""
    trials["tokens"] = [patch_tokens(m, s) for m, s in zip(trials["model"], trials["image_size"])]
    return trials[trials["tokens"].notna()]


def resolution_lines(data: SweepData) -> list[ResolutionLine]:
    """Lines of two or more resolutions (or one with an out-of-memory beside it); [] where the sweep has none."""
    done = with_tokens(data.trials)
    every = read(data.sweep_dir, "trials")
    oom = with_tokens(every[every["status"] == TrialStatus.OOM.value])
    keys = set(done.groupby(list(LINE_KEYS)).groups) | set(oom.groupby(list(LINE_KEYS)).groups if len(oom) else ())
    lines = []
    for key in sorted(keys, key=str):
        trials, ran_out = (
            part[(part[list(LINE_KEYS)] == pd.Series(key, index=LINE_KEYS)).all(axis=1)] for part in (done, oom)
        )
        if trials["tokens"].nunique() < 2 and ran_out.empty:
            continue
        points = trials.groupby("tokens", as_index=False).agg(
            image_size=("image_size", "first"),
            peak_mem_gib=("peak_mem_gib", "median"),
            throughput_per_gpu=("throughput_per_worker", "median"),
        )
        lines.append(ResolutionLine(line_label(key), points, tuple(sorted(int(t) for t in ran_out["tokens"]))))
    return lines


def resolution_section(data: SweepData) -> list[Block]:
    """The report's section: per metric a table of tokens per image by line, then each line's memory edge."""
    lines = resolution_lines(data)
    if not lines:
        return []
    blocks: list[Block] = [
        Heading("Resolution and sequence parallelism"),
        Paragraph(
            "Peak memory per rank (GiB) and throughput per GPU (samples/s) against the patch tokens per image, "
            "one column per split (SP or TP degree, engine) and checkpointing setting (medians over repeats; — not "
            "run or out of memory)."
        ),
    ]
    for metric in ("peak_mem_gib", "throughput_per_gpu"):
        table = pd.concat(
            [line.points.set_index("tokens")[metric].rename(line.label) for line in lines], axis=1
        ).sort_index()
        blocks += [Paragraph(f"`{metric}`:"), Table.of(table.reset_index())]
    blocks.append(Bullets([line.edge for line in lines]))
    return blocks
