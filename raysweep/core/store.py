"""The result store: a sweep directory of Parquet tables and ``sweep.json``, written crash-safely.

Every file is written under a temporary name in the same directory and moved into place
with ``os.replace``, so a reader globbing ``*.parquet`` never sees a partial file and a
killed writer leaves every existing table readable.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from raysweep.core.schema import (
    SCHEMA_VERSION,
    TABLES,
    check_schema_version,
    parquet_stamp,
    stamp_of_parquet,
    table_from_rows,
    version_stamp,
)
from raysweep.core.status import is_finished

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_name(kind: str, name: str) -> str:
    """Sweep and trial names become directory and file names: keep them inside the results dir."""
    if not SAFE_NAME.fullmatch(name) or ".." in name:
        raise UsageError(
            f"{kind} name {name!r} is not allowed: use letters, digits, '.', '_' and '-' "
            "(no path separators, no '..', at most 128 characters)"
        )
    return name


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_table(path: Path, table: pa.Table) -> None:
    """Write ``table`` as ``path``, its metadata stamped with raysweep's and the schema's version."""
    sink = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}), **parquet_stamp()}), sink)
    atomic_write_bytes(path, sink.getvalue().to_pybytes())


class ResultStore:
    """One sweep's directory: ``trials/``, ``epochs/``, ``ranks/`` and ``sweep.json``."""

    def __init__(self, results_dir: str | Path, sweep: str):
        self.sweep = check_name("sweep", sweep)
        self.root = Path(results_dir) / sweep

    def table_dir(self, table: str) -> Path:
        return self.root / table

    def write_rows(self, table: str, trial_id: str, rows: list[dict[str, Any]]) -> Path:
        """Replace the trial's file in ``table`` with these rows (the full set for that trial)."""
        check_name("trial", trial_id)
        rows = [{"sweep": self.sweep, "trial_id": trial_id, **row} for row in rows]
        path = self.table_dir(table) / f"{trial_id}.parquet"
        atomic_write_table(path, table_from_rows(table, rows))
        return path

    def read_trial_rows(self, table: str, trial_id: str) -> list[dict[str, Any]]:
        """The rows this trial already has in ``table`` (none if it has no file yet)."""
        path = self.table_dir(table) / f"{check_name('trial', trial_id)}.parquet"
        if not path.is_file():
            return []
        rows = pq.read_table(path).to_pylist()
        return [{k: v for k, v in row.items() if k not in ("sweep", "trial_id")} for row in rows]

    def is_finished(self, trial_id: str) -> bool:
        """Whether the trial has a final row: completed, or stopped by the sweep's scheduler."""
        return any(is_finished(row.get("status")) for row in self.read_trial_rows("trials", trial_id))

    def finished_params(self) -> list[str]:
        """``TrialParams.key()`` of every trial that has a row: those ran and are not to run again.

        Each ``params_json`` is read back through today's parameters, so a row written by an older raysweep
        (without a field added since, or ``compile`` as a boolean) still matches its trial on ``--resume``.
        """
        return [canonical_key(p) for p in self.read("trials").column("params_json").to_pylist() if p]

    def write_sweep_json(self, info: dict[str, Any]) -> Path:
        """``info`` as ``sweep.json``, stamped with the writing raysweep's and the schema's version."""
        path = self.root / "sweep.json"
        info = {**info, **version_stamp()}
        atomic_write_bytes(path, (json.dumps(info, indent=2, sort_keys=True, default=str) + "\n").encode())
        return path

    def read_sweep_json(self) -> dict[str, Any]:
        return json.loads((self.root / "sweep.json").read_text())

    def read(self, table: str) -> pa.Table:
        """All rows of one table in this sweep (empty table of the right schema if none)."""
        return read_table(self.table_dir(table), table)


def canonical_key(params_json: str) -> str:
    """``params_json`` as today's ``TrialParams.key()``; as written where today's parameters cannot read it."""
    try:
        return TrialParams.from_dict(json.loads(params_json)).key()
    except (UsageError, ValueError, TypeError):
        return params_json


def read_table(directory: Path, table: str) -> pa.Table:
    """Read every ``*.parquet`` file in ``directory`` with the schema of ``table``.

    A file of an older schema version (or of none) reads with nulls in the columns it lacks; one of a
    newer version, or whose columns no longer convert, is refused with the version it needs.
    """
    schema = TABLES[table]
    files = sorted(directory.glob("*.parquet")) if directory.is_dir() else []
    if not files:
        return schema.empty_table()
    parts = []
    for file in files:
        try:
            part = pq.read_table(file)
        except (OSError, pa.ArrowException) as e:
            raise UsageError(f"{file} is not a readable Parquet file ({e}); move it out of {directory}") from None
        stamp = stamp_of_parquet(part.schema.metadata)
        found = check_schema_version(stamp, str(file))
        missing = [c for c in schema.names if c not in part.column_names]
        for col in missing:
            part = part.append_column(col, pa.nulls(part.num_rows, schema.field(col).type))
        try:
            parts.append(part.select(schema.names).cast(schema))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as e:
            raise UsageError(
                f"{file} (schema version {found}) does not convert to schema version {SCHEMA_VERSION} ({e}); "
                f"read it with the raysweep that wrote it ({stamp.get('raysweep_version', 'unknown')})"
            ) from None
    return pa.concat_tables(parts)
