"""``python -m raysweep.query "SQL"``: DuckDB SQL over the result tables of one or all sweeps.

The views ``trials``, ``epochs`` and ``ranks`` read every sweep under ``--results-dir``
(``<dir>/*/<table>/*.parquet``), or one sweep with ``--sweep``. Each view always has every
column of its schema in raysweep.core.schema, even before any file exists, so queries written
against the schema work on a sweep that has not finished (or started) yet.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from raysweep.core.command import ArgumentParser, exit_process, run_command
from raysweep.core.errors import UsageError
from raysweep.core.names import did_you_mean
from raysweep.core.schema import TABLES
from raysweep.core.store import check_name

DEFAULT_RESULTS_DIR = "./raysweep-results"
OUTPUT_FORMATS = (".csv", ".parquet")


def table_glob(sweep: str | None, table: str) -> str:
    """Files of one table, relative to the results directory."""
    return f"{sweep or '*'}/{table}/*.parquet"


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connect(results_dir: str | Path, sweep: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the views ``trials``, ``epochs`` and ``ranks``."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise UsageError(f"results directory {results_dir} does not exist (set it with --results-dir)")
    if sweep is not None and not (results_dir / check_name("sweep", sweep)).is_dir():
        sweeps = sorted(p.name for p in results_dir.iterdir() if p.is_dir())
        there = ", ".join(sweeps) or "none"
        raise UsageError(f"no sweep {sweep!r} in {results_dir}{did_you_mean(sweep, sweeps)} (sweeps there: {there})")
    con = duckdb.connect()
    for name, schema in TABLES.items():
        # The empty table fixes the columns and their order; rows come from the files, and a file
        # written before a column existed gets nulls there (union by name).
        con.register(f"{name}_schema", schema.empty_table())
        pattern = table_glob(sweep, name)
        source = f"SELECT * FROM {name}_schema"
        if any(results_dir.glob(pattern)):
            files = sql_string(str(results_dir / pattern))
            source += f" UNION ALL BY NAME SELECT * FROM read_parquet({files}, union_by_name = true)"
        con.execute(f"CREATE VIEW {name} AS {source}")
    return con


def run_query(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table | None:
    """The result of the last statement, or None when it returns no relation."""
    relation = con.sql(sql)
    return None if relation is None else relation.to_arrow_table()


def one_line(error: Exception) -> str:
    """DuckDB messages span lines (a caret under the query, candidate names): keep the words on one line."""
    lines = [line.strip() for line in str(error).splitlines()]
    return " ".join(line for line in lines if line and not line.startswith("LINE ") and set(line) != {"^"})


def format_table(result: pa.Table) -> str:
    if result.num_rows == 0:
        return "(no rows; columns: " + ", ".join(result.column_names) + ")"
    frame = result.to_pandas()
    with pd.option_context("display.width", None, "display.max_columns", None, "display.max_colwidth", 60):
        return frame.to_string(index=False, na_rep="NULL")


def write_result(result: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        # CSV has no list type: write list columns (node_ids, device_names) as JSON text.
        for i, column in enumerate(result.schema):
            if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
                text = [None if v is None else json.dumps(v) for v in result.column(i).to_pylist()]
                result = result.set_column(i, column.name, pa.array(text, pa.string()))
        pa_csv.write_csv(result, path)
    else:
        pq.write_table(result, path)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog="python -m raysweep.query",
        description="Run DuckDB SQL over the views trials, epochs and ranks of the sweep results.",
    )
    parser.add_argument("sql", help='the query, e.g. "SELECT num_workers, avg(throughput) FROM trials GROUP BY 1"')
    parser.add_argument(
        "--results-dir",
        default=DEFAULT_RESULTS_DIR,
        help=f"directory holding the sweeps (default: {DEFAULT_RESULTS_DIR})",
    )
    parser.add_argument("--sweep", default=None, help="query only this sweep (default: all sweeps in --results-dir)")
    parser.add_argument("--out", default=None, help="write the result to FILE.csv or FILE.parquet instead of printing")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return run_command(query_command, argv, bad_input=(OSError,))


def query_command(argv: list[str] | None) -> int:
    args = parse_args(argv)
    out = Path(args.out) if args.out else None
    if out is not None and out.suffix.lower() not in OUTPUT_FORMATS:
        raise UsageError(f"--out {out}: use a .csv or .parquet file name")
    try:
        result = run_query(connect(args.results_dir, args.sweep), args.sql)
    except duckdb.Error as exc:  # the user's SQL: DuckDB's words, on one line
        raise UsageError(one_line(exc)) from None
    if out is not None:
        if result is None:
            raise UsageError("the query returned no result to write to --out")
        write_result(result, out)
    elif result is not None:
        print(format_table(result))
    return 0


if __name__ == "__main__":
    exit_process(main())
