"""raysweep.query: DuckDB views over the result tables of a results directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from raysweep.core.schema import TABLES
from raysweep.core.store import ResultStore
from raysweep.query import connect, main, run_query


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """Two sweeps: 'alpha' with trials and epochs (no ranks), 'beta' with trials only."""
    alpha = ResultStore(tmp_path, "alpha")
    for n, seconds in ((1, 100.0), (2, 55.0), (4, 30.0)):
        alpha.write_rows(
            "trials",
            f"a{n}",
            [
                {
                    "status": "completed",
                    "num_workers": n,
                    "train_time_s": seconds,
                    "throughput": 4096 / seconds,
                    "node_ids": ["n0"] * n,
                }
            ],
        )
        alpha.write_rows(
            "epochs",
            f"a{n}",
            [{"epoch": e, "val_accuracy": 0.5 + 0.2 * e, "elapsed_s": seconds * (e + 1)} for e in range(2)],
        )
    alpha.write_rows("trials", "a8", [{"status": "oom", "num_workers": 8}])
    beta = ResultStore(tmp_path, "beta")
    beta.write_rows("trials", "b1", [{"status": "completed", "num_workers": 1, "train_time_s": 10.0}])
    return tmp_path


def test_views_exist_with_schema_columns_even_without_files(results):
    con = connect(results)
    for name, schema in TABLES.items():
        columns = [row[0] for row in con.execute(f"DESCRIBE {name}").fetchall()]
        assert columns == schema.names
    assert run_query(con, "SELECT count(*) AS n FROM ranks").to_pylist() == [{"n": 0}]


def test_aggregate_over_all_sweeps(results):
    sql = (
        "SELECT sweep, count(*) AS trials, sum(status = 'completed')::INT AS completed, "
        "min(train_time_s) AS fastest_s FROM trials GROUP BY sweep ORDER BY sweep"
    )
    assert run_query(connect(results), sql).to_pylist() == [
        {"sweep": "alpha", "trials": 4, "completed": 3, "fastest_s": 30.0},
        {"sweep": "beta", "trials": 1, "completed": 1, "fastest_s": 10.0},
    ]


def test_join_epochs_to_trials(results):
    sql = (
        "SELECT t.num_workers, max(e.val_accuracy) AS best, max(e.elapsed_s) AS wall_s FROM trials t "
        "JOIN epochs e USING (sweep, trial_id) GROUP BY 1 ORDER BY 1"
    )
    rows = run_query(connect(results), sql).to_pylist()
    assert [(r["num_workers"], r["wall_s"]) for r in rows] == [(1, 200.0), (2, 110.0), (4, 60.0)]
    assert all(r["best"] == pytest.approx(0.7) for r in rows)


def test_sweep_flag_restricts_to_one_sweep(results, capsys):
    assert main(["SELECT count(*) AS n FROM trials", "--results-dir", str(results), "--sweep", "beta"]) == 0
    assert capsys.readouterr().out.split() == ["n", "1"]


def test_prints_a_readable_table(results, capsys):
    sql = "SELECT trial_id, num_workers, train_time_s FROM trials WHERE sweep = 'alpha' ORDER BY num_workers"
    assert main([sql, "--results-dir", str(results)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["trial_id", "num_workers", "train_time_s"]
    assert lines[1].split() == ["a1", "1", "100.0"] and lines[4].split() == ["a8", "8", "NULL"]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_out_writes_csv_and_parquet(results, suffix):
    out = results / "exports" / f"result{suffix}"
    sql = "SELECT trial_id, num_workers, node_ids FROM trials WHERE status = 'completed' ORDER BY trial_id"
    assert main([sql, "--results-dir", str(results), "--out", str(out)]) == 0
    table = pa_csv.read_csv(out) if suffix == ".csv" else pq.read_table(out)
    assert table.column("trial_id").to_pylist() == ["a1", "a2", "a4", "b1"]
    assert table.column("num_workers").to_pylist() == [1, 2, 4, 1]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["SELEC 1"], "Parser Error"),
        (["SELECT no_such_column FROM trials"], "no_such_column"),
        (["SELECT * FROM trials", "--sweep", "gamma"], "no sweep 'gamma'"),
        (["SELECT * FROM trials", "--sweep", "../alpha"], "not allowed"),
        (["SELECT * FROM trials", "--out", "result.json"], "use a .csv or .parquet"),
    ],
)
def test_bad_input_exits_2_with_one_line(results, capsys, argv, message):
    assert main([*argv, "--results-dir", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("raysweep: error: ") and message in err


def test_missing_results_dir_exits_2(tmp_path, capsys):
    assert main(["SELECT 1", "--results-dir", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_empty_results_dir_still_has_views(tmp_path):
    assert run_query(connect(tmp_path), "SELECT count(*) AS n FROM trials").to_pylist() == [{"n": 0}]


def test_bad_sql_raises_duckdb_error_in_the_library(results):
    with pytest.raises(duckdb.Error):
        run_query(connect(results), "SELECT * FROM nowhere")


def test_module_runs_as_a_program(results):
    done = subprocess.run(
        [sys.executable, "-m", "raysweep.query", "SELECT count(*) AS n FROM epochs", "--results-dir", str(results)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.split() == ["n", "6"]
