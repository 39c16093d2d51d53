"""The figures of the docs, one module per experiment or topic, each registering its renderers with ``@figure``.

A figure is a block of the markdown between two comments, ``<!-- figure:NAME -->`` and ``<!-- /figure -->``,
whose text ``docs/render.py`` owns: it is replaced by what the function registered as NAME returns, computed from
a summary table under ``docs/results/<experiment>/`` (that experiment's README gives the command, date,
hardware and versions; its script wrote the table): ``summary.csv``, one row per trial
(``summarize_sweep.py``), or the long table of the figures its runs printed (``summarize_logs.py``: source,
record, quantity, value; ``summary-logs.csv`` beside a sweep's ``summary.csv``), or an experiment's own
script's. This module holds the registry and the readers and formatters every figure module uses.
"""

from __future__ import annotations

import csv
import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"

FIGURES: dict[str, Callable[[], str]] = {}


def figure(name: str) -> Callable[[Callable[[], str]], Callable[[], str]]:
    """Registers a figure's renderer under the name its markdown block carries."""

    def register(render: Callable[[], str]) -> Callable[[], str]:
        FIGURES[name] = render
        return render

    return register


def summary(experiment: str, name: str = "summary.csv") -> list[dict]:
    """An experiment's summary table (``summary.csv`` unless named), numbers as numbers, empty cells as None."""
    with open(RESULTS / experiment / name, newline="") as f:
        return [{k: number(v) for k, v in row.items()} for row in csv.DictReader(f)]


def measures(experiment: str, name: str = "summary.csv") -> dict[tuple[str, str, str], float]:
    """A long summary (``summarize_logs.py``: source, record, quantity, value) keyed by its first three columns."""
    with open(RESULTS / experiment / name, newline="") as f:
        return {(r["source"], r["record"], r["quantity"]): float(r["value"]) for r in csv.DictReader(f)}


def measured(experiment: str, source: str, quantity: str, name: str = "summary.csv") -> list[float]:
    """Every value of ``quantity`` in one log of a long summary, in the log's order."""
    return [v for (src, _, q), v in measures(experiment, name).items() if src == source and q == quantity]


def number(text: str) -> object:
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def table(header: list[str], rows: list[list[str]], align: str) -> str:
    """A markdown table; ``align`` has one letter per column, l or r."""
    rule = "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"
    lines = ["|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|" for cells in [header, *rows]]
    return "\n".join([lines[0], rule, *lines[1:]])


WORDS = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def experiment_script(experiment: str, filename: str) -> ModuleType:
    """A script of ``docs/results/<experiment>/`` imported as a module, whose rules a figure reuses."""
    path = RESULTS / experiment / filename
    spec = importlib.util.spec_from_file_location(f"{experiment}/{filename}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while they are built
    spec.loader.exec_module(module)
    return module


def count(n: int) -> str:
    """A small count in words, as the docs' prose writes it."""
    return WORDS[n] if n < len(WORDS) else str(n)


def span(values: list[float], fmt: str) -> str:
    low, high = min(values), max(values)
    return format(low, fmt) if format(low, fmt) == format(high, fmt) else f"{low:{fmt}}-{high:{fmt}}"


def spoken(items: list) -> str:
    """``64, 128 and 256``; ``none`` for no items."""
    words = [str(i) for i in items]
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else (words[0] if words else "none")


def listed(values: list[float], fmt: str) -> str:
    return ", ".join(format(v, fmt) for v in values)


def records(experiment: str, source: str, name: str = "summary.csv") -> dict[str, dict[str, float]]:
    """One log of a long summary as record -> quantity -> value, records in the log's order."""
    out: dict[str, dict[str, float]] = {}
    for (src, record, quantity), value in measures(experiment, name).items():
        if src == source:
            out.setdefault(record, {})[quantity] = value
    return out


def load_all() -> dict[str, Callable[[], str]]:
    """Imports every figure module of this package, each registering its figures; the registry."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    return FIGURES
