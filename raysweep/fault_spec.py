"""The test-only fault spec ``KIND@RANK:STEP`` as a value: its kinds and its parser (trainers/faults.py fires it)."""

from __future__ import annotations

from dataclasses import dataclass

from raysweep.errors import UsageError

KINDS = ("raise", "exit", "oom", "hang")


@dataclass(frozen=True)
class Fault:
    kind: str
    rank: int
    step: int


def parse_fault(spec: str) -> Fault:
    kind, _, where = spec.partition("@")
    rank, _, step = where.partition(":")
    if kind not in KINDS or not rank.isdigit() or not step.isdigit():
        raise UsageError(
            f"inject_fault={spec!r}: expected KIND@RANK:STEP with KIND one of {', '.join(KINDS)}, e.g. exit@1:3"
        )
    return Fault(kind, int(rank), int(step))
