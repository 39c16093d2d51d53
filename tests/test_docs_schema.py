"""The schema tables in docs/results.md are the schema: generated from it, and compared here so neither drifts."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from raysweep.core.params import TrialParams
from raysweep.core.schema import TABLES, schema_markdown

RESULTS_DOC = (Path(__file__).resolve().parents[1] / "docs" / "results.md").read_text()


@pytest.mark.parametrize("table", sorted(TABLES))
def test_the_guide_holds_the_generated_table_of_every_result_table(table):
    assert schema_markdown(table) in RESULTS_DOC, (
        f"regenerate docs/results.md's {table} table with schema_markdown({table!r})"
    )


def test_every_measured_column_has_a_doc_and_every_column_appears():
    for table, schema in TABLES.items():
        text = schema_markdown(table)
        missing = [name for name in schema.names if f"`{name}`" not in text]
        # configuration columns are the one "every trial parameter" row
        assert set(missing) <= set(TrialParams.field_names()), (table, missing)


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_type_reads_back_from_a_parquet_file_as_the_guide_prints_it(table, tmp_path):
    # Parquet names a list's items "element"; a schema saying "item" would print list<item: string> in the
    # guide while every file holds list<element: string>
    pq.write_table(TABLES[table].empty_table(), tmp_path / "t.parquet")
    read_back = pq.read_schema(tmp_path / "t.parquet")
    assert [str(f.type) for f in read_back] == [str(f.type) for f in TABLES[table]]
