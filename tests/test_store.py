"""ResultStore: Parquet tables with the shared schema, written atomically, names kept inside the results dir."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from raysweep.core import store as store_module
from raysweep.core.errors import UsageError
from raysweep.core.schema import (
    EPOCHS,
    RANKS,
    SCHEMA_VERSION,
    TABLES,
    TRIALS,
    UNVERSIONED,
    check_schema_version,
    raysweep_version,
    stamp_of_parquet,
    version_stamp,
)
from raysweep.core.store import ResultStore, check_name, read_table

SWEEP = "batch_grid-20261202-120000"


@pytest.fixture
def store(tmp_path) -> ResultStore:
    return ResultStore(tmp_path / "results", SWEEP)


def trial_row(**extra) -> dict:
    return {
        "status": "completed",
        "model": "vit_micro_patch4_32",
        "num_workers": 2,
        "micro_batch_per_worker": 32,
        "node_ids": ["a", "b"],
        "throughput": 123.5,
        "compile": "false",
        "compiled": False,
        "started_at": dt.datetime(2026, 12, 2, 12, 0, tzinfo=dt.timezone.utc),
        **extra,
    }


def leftovers(root) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.name.startswith(".") or p.name.endswith(".tmp"))


def test_write_then_read_round_trips_with_the_schema(store):
    path = store.write_rows("trials", "t1", [trial_row()])
    assert path == store.root / "trials" / "t1.parquet"
    table = store.read("trials")
    assert table.schema == TRIALS
    (row,) = table.to_pylist()
    assert row["sweep"] == SWEEP and row["trial_id"] == "t1"
    assert row["num_workers"] == 2 and row["throughput"] == 123.5
    assert row["node_ids"] == ["a", "b"] and row["compile"] == "false" and row["compiled"] is False
    assert row["started_at"] == dt.datetime(2026, 12, 2, 12, 0, tzinfo=dt.timezone.utc)


def test_file_on_disk_has_the_schema_itself(store):
    path = store.write_rows("epochs", "t1", [{"epoch": 0, "train_loss": 2.3}, {"epoch": 1, "train_loss": 1.9}])
    assert pq.read_schema(path).remove_metadata() == EPOCHS


def test_missing_columns_become_nulls(store):
    store.write_rows("ranks", "t1", [{"rank": 0}, {"rank": 1, "step_time_ms": 5.0}])
    rows = store.read("ranks").to_pylist()
    assert [r["rank"] for r in rows] == [0, 1]
    assert rows[0]["step_time_ms"] is None and rows[1]["step_time_ms"] == 5.0
    assert all(r["node"] is None for r in rows)


def test_files_written_without_some_columns_read_with_nulls_for_them(tmp_path):
    directory = tmp_path / "ranks"
    directory.mkdir()
    pq.write_table(pa.table({"trial_id": ["old"], "rank": pa.array([3], pa.int32())}), directory / "old.parquet")
    table = read_table(directory, "ranks")
    assert table.schema == RANKS
    assert table.to_pylist() == [{name: None for name in RANKS.names} | {"trial_id": "old", "rank": 3}]


def test_unknown_columns_are_rejected_and_nothing_is_written(store):
    with pytest.raises(ValueError, match="not in the trials schema.*'thruput'"):
        store.write_rows("trials", "t1", [trial_row(thruput=1.0)])
    assert not (store.root / "trials" / "t1.parquet").exists()


def test_rewriting_a_trials_file_replaces_its_rows(store):
    store.write_rows("epochs", "t1", [{"epoch": 0}])
    store.write_rows("epochs", "t2", [{"epoch": 0}])
    store.write_rows("epochs", "t1", [{"epoch": 0}, {"epoch": 1}, {"epoch": 2}])
    rows = store.read("epochs").to_pylist()
    assert sorted((r["trial_id"], r["epoch"]) for r in rows) == [("t1", 0), ("t1", 1), ("t1", 2), ("t2", 0)]


def test_every_table_reads_empty_with_its_schema_before_anything_is_written(store):
    for name, schema in TABLES.items():
        table = store.read(name)
        assert table.num_rows == 0 and table.schema == schema


def test_no_temporary_files_are_left_behind(store):
    for i in range(3):
        store.write_rows("trials", f"t{i}", [trial_row()])
        store.write_rows("trials", f"t{i}", [trial_row(status="failed")])
    store.write_sweep_json({"sweep": SWEEP})
    assert leftovers(store.root) == []
    assert sorted(p.name for p in (store.root / "trials").iterdir()) == ["t0.parquet", "t1.parquet", "t2.parquet"]


def test_a_write_failing_midway_leaves_the_old_file_intact(store, monkeypatch):
    path = store.write_rows("trials", "t1", [trial_row(throughput=1.0)])
    old_bytes = path.read_bytes()
    real_write_table = pq.write_table

    def write_half_then_fail(table, where, *args, **kwargs):
        sink = pa.BufferOutputStream()
        real_write_table(table, sink)
        where.write(sink.getvalue().to_pybytes()[:100])  # a partial file...
        raise OSError("disk full")  # ...then the writer dies

    monkeypatch.setattr(store_module.pq, "write_table", write_half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        store.write_rows("trials", "t1", [trial_row(throughput=2.0)])
    monkeypatch.undo()

    assert path.read_bytes() == old_bytes
    assert store.read("trials").column("throughput").to_pylist() == [1.0]
    assert leftovers(store.root) == []


def test_sweep_json_round_trips(store):
    info = {"sweep": SWEEP, "trials": [{"num_workers": 2}], "notes": [], "when": dt.date(2026, 12, 2)}
    path = store.write_sweep_json(info)
    assert path == store.root / "sweep.json"
    # non-JSON values become strings; the versions are stamped in
    assert store.read_sweep_json() == {**info, "when": "2026-12-02", **version_stamp()}


@pytest.mark.parametrize("bad", ["../x", "..", "/abs", "a/b", "a\\b", "nul\x00", "", ".hidden", "-flag", "x" * 129])
def test_check_name_rejects_names_that_could_leave_the_results_dir(bad):
    with pytest.raises(UsageError, match="name .* is not allowed"):
        check_name("sweep", bad)


def test_check_name_rejects_a_trailing_newline():
    with pytest.raises(UsageError):
        check_name("sweep", "abc\n")


@pytest.mark.parametrize("good", ["batch_grid-20261202-120000", "a", "trial_0001", "v1.2", "x" * 128])
def test_check_name_accepts_plain_names(good):
    assert check_name("sweep", good) == good


def test_store_refuses_unsafe_sweep_and_trial_names(tmp_path):
    with pytest.raises(UsageError):
        ResultStore(tmp_path, "../escape")
    s = ResultStore(tmp_path, "ok")
    with pytest.raises(UsageError):
        s.write_rows("trials", "../../evil", [{}])
    assert list(tmp_path.rglob("*.parquet")) == []


def test_every_file_and_sweep_json_carry_raysweep_and_schema_versions(store):
    path = store.write_rows("trials", "t1", [trial_row()])
    metadata = pq.read_schema(path).metadata
    assert metadata[b"schema_version"] == str(SCHEMA_VERSION).encode()
    assert metadata[b"raysweep_version"] == raysweep_version().encode()
    store.write_sweep_json({"sweep": SWEEP})
    info = store.read_sweep_json()
    assert info["schema_version"] == SCHEMA_VERSION and info["raysweep_version"] == raysweep_version()


def test_a_file_from_before_versions_reads_as_the_oldest_with_nulls_in_the_columns_it_lacks(store):
    (store.root / "trials").mkdir(parents=True)
    old = pa.table({"sweep": [SWEEP], "trial_id": ["t0"], "status": ["completed"], "num_workers": [2]})
    pq.write_table(old, store.root / "trials" / "t0.parquet")
    assert stamp_of_parquet(pq.read_schema(store.root / "trials" / "t0.parquet").metadata) == {}
    assert check_schema_version({}, "old") == UNVERSIONED
    table = store.read("trials")
    assert table.schema == TRIALS
    assert table.column("num_workers").to_pylist() == [2] and table.column("throughput").to_pylist() == [None]


def test_a_version_1_file_reads_its_boolean_compile_as_what_was_asked(store):
    (store.root / "trials").mkdir(parents=True)
    old = pa.table({"trial_id": ["t0", "t1"], "compile": [False, True]})
    pq.write_table(old.replace_schema_metadata({b"schema_version": b"1"}), store.root / "trials" / "t0.parquet")
    assert store.read("trials").column("compile").to_pylist() == ["false", "true"]


def test_a_file_of_a_newer_schema_is_refused_naming_the_raysweep_it_needs(store):
    path = store.write_rows("trials", "t1", [trial_row()])
    newer = pq.read_table(path)
    newer = newer.replace_schema_metadata(
        {b"schema_version": str(SCHEMA_VERSION + 1).encode(), b"raysweep_version": b"9.9"}
    )
    pq.write_table(newer, path)
    with pytest.raises(
        UsageError,
        match=rf"t1.parquet was written by raysweep 9.9 with schema version {SCHEMA_VERSION + 1}.*9.9 or newer",
    ):
        store.read("trials")


def test_a_file_whose_column_no_longer_converts_is_refused_with_its_version(store):
    (store.root / "trials").mkdir(parents=True)
    pq.write_table(pa.table({"trial_id": ["t0"], "num_workers": ["two"]}), store.root / "trials" / "t0.parquet")
    with pytest.raises(UsageError, match="schema version 0.*does not convert"):
        store.read("trials")


def test_a_row_an_older_raysweep_wrote_matches_its_trial_on_resume(store):
    import json

    from raysweep.core.params import TrialParams

    params = TrialParams.from_dict({"micro_batch_per_worker": 32})
    older = params.to_dict()
    older["compile"] = False  # written as a boolean before compile took auto
    del older["compile_mode"]  # a field added since
    store.write_rows("trials", "t1", [trial_row(params_json=json.dumps(older, sort_keys=True))])
    store.write_rows("trials", "t2", [trial_row(params_json='{"no_such_field": 1}')])
    assert store.finished_params() == [params.key(), '{"no_such_field": 1}']  # unreadable: kept as written
