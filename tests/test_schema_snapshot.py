"""The tables' columns and Arrow types are pinned against a committed snapshot, so a refactor cannot change them.

A deliberate schema change regenerates the snapshot: ``python tests/test_schema_snapshot.py`` and commits it.
"""

from __future__ import annotations

import json
from pathlib import Path

from raysweep.core.schema import TABLES

SNAPSHOT = Path(__file__).resolve().parent / "data" / "schema.json"


def current() -> dict[str, list[list[str]]]:
    """Each table's columns as [name, Arrow type], in order."""
    return {table: [[f.name, str(f.type)] for f in schema] for table, schema in sorted(TABLES.items())}


def test_every_table_keeps_its_committed_columns_and_arrow_types():
    assert current() == json.loads(SNAPSHOT.read_text())


if __name__ == "__main__":
    tables = current()
    body = ",\n".join(
        f"  {json.dumps(t)}: [\n" + ",\n".join(f"    {json.dumps(c)}" for c in cols) + "\n  ]"
        for t, cols in tables.items()
    )
    SNAPSHOT.write_text("{\n" + body + "\n}\n")
