"""Helpers for in-process CLI tests: a tripwire against starting Ray, and the dry-run table parsed."""

from __future__ import annotations

import sys
import types

import pytest

from raysweep.tune import main


@pytest.fixture(autouse=True)
def no_sweep_starts(monkeypatch):
    """Tripwire: these tests must never start Ray; reaching ``run_sweep`` fails the test instead."""

    def run_sweep(*args, **kwargs):
        raise AssertionError("reached run_sweep: this command would have started Ray")

    monkeypatch.setitem(sys.modules, "raysweep.sweep", types.SimpleNamespace(run_sweep=run_sweep))


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    """``python -m raysweep.tune ARGV`` in-process: exit code, stdout, stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def table_rows(out: str) -> list[dict[str, str]]:
    """The dry run's trial table as dicts (the last column, 'needs', contains spaces)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#  "))
    header = lines[start].split()
    rows = []
    for line in lines[start + 2 :]:
        if not line[:1].isdigit() or " trials; dry run" in line:
            break
        rows.append(dict(zip(header, line.split(maxsplit=len(header) - 1))))
    return rows
