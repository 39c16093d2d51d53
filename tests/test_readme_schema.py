"""The README's schema tables are the schema: generated from it, and compared here so neither drifts."""

from __future__ import annotations

from pathlib import Path

import pytest

from raysweep.core.params import TrialParams
from raysweep.core.schema import TABLES, schema_markdown

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


@pytest.mark.parametrize("table", sorted(TABLES))
def test_readme_holds_the_generated_table_of_every_result_table(table):
    assert schema_markdown(table) in README, f"regenerate the README's {table} table with schema_markdown({table!r})"


def test_every_measured_column_has_a_doc_and_every_column_appears():
    for table, schema in TABLES.items():
        text = schema_markdown(table)
        missing = [name for name in schema.names if f"`{name}`" not in text]
        # configuration columns are the one "every trial parameter" row
        assert set(missing) <= set(TrialParams.field_names()), (table, missing)
