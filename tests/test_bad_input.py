"""The rest of the bad-input catalogue (see also test_cli.py): each is one line, exit 2, nothing started or damaged."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

import pytest

from analysis.__main__ import main as analysis_main
from raysweep.core.store import ResultStore
from raysweep.query import main as query_main
from raysweep.tune import main as tune_main


def one_line_exit_2(capsys, code: int, fragment: str) -> None:
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert fragment in err, err


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


@pytest.fixture
def closed_port() -> int:
    """A localhost port that nothing listens on: bound once to get a free number, then closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def finished_sweep(tmp_path) -> ResultStore:
    """A sweep directory as a run leaves it: tables, sweep.json and Tune's state folder."""
    store = ResultStore(tmp_path / "results", "done")
    store.write_rows("trials", "t1", [{"status": "completed", "num_workers": 1, "params_json": "{}"}])
    store.write_sweep_json({"sweep": "done", "trials": [], "cluster": {"address": "local"}})
    (store.root / "_tune").mkdir()
    return store


BAD_FLAGS = {
    "negative max failures": (["--space", "batch_grid", "--max-failures", "-1"], "--max-failures must be >= 0"),
    "zero collective timeout": (["--space", "batch_grid", "--collective-timeout", "0"], "--collective-timeout"),
    "retry-failed without resume": (["--space", "batch_grid", "--retry-failed"], "only applies with --resume"),
    "bad fault spec": (["--space", "batch_grid", "--set", "inject_fault=boom"], "inject_fault='boom'"),
    "slow rank out of range": (["--space", "batch_grid", "--set", "slow_ranks=3"], "slow_ranks [3] outside 0..0"),
    "global batch not divisible": (
        ["--space", "batch_grid", "--set", "global_batch=30", "--set", "num_workers=4"],
        "global_batch=30 is not divisible",
    ),
    "zero-3 with compile": (
        ["--space", "batch_grid", "--set", "zero_stage=3", "--set", "compile=true"],
        "zero_stage=3",
    ),
    "negative checkpoint interval": (["--space", "batch_grid", "--checkpoint-every", "-1"], "checkpoint_every"),
    "unwritable results dir": (["--space", "batch_grid", "--results-dir", "/proc/raysweep"], "not writable"),
}


@pytest.mark.parametrize(("argv", "fragment"), list(BAD_FLAGS.values()), ids=list(BAD_FLAGS))
def test_bad_flags_are_one_line_exit_2(capsys, tmp_path, argv, fragment):
    if "--results-dir" not in argv:
        argv = [*argv, "--results-dir", str(tmp_path / "r")]
    one_line_exit_2(capsys, tune_main(argv), fragment)
    assert not (tmp_path / "r").exists()


def test_cifar_dir_without_cifar_files_is_refused(capsys, tmp_path):
    (tmp_path / "data").mkdir()
    code = tune_main(
        [
            "--space",
            "batch_grid",
            "--dataset",
            "cifar10",
            "--data-dir",
            str(tmp_path / "data"),
            "--results-dir",
            str(tmp_path / "r"),
            "--dry-run",
        ]
    )
    one_line_exit_2(capsys, code, "cifar-10-batches-py lacks data_batch_1")
    assert not (tmp_path / "r").exists()


def test_imagefolder_dir_without_splits_is_refused(capsys, tmp_path):
    code = tune_main(
        [
            "--space",
            "batch_grid",
            "--dataset",
            "imagefolder",
            "--data-dir",
            str(tmp_path),
            "--results-dir",
            str(tmp_path / "r"),
            "--dry-run",
        ]
    )
    one_line_exit_2(capsys, code, "has no train/ folder (needs train/<class>/ and val/<class>/)")


def test_resume_of_a_directory_that_is_not_a_sweep(capsys, tmp_path):
    one_line_exit_2(capsys, tune_main(["--resume", str(tmp_path)]), "not a raysweep sweep")
    one_line_exit_2(capsys, tune_main(["--resume", str(tmp_path / "missing")]), "no such directory")


def test_resume_with_a_space_is_refused(capsys, finished_sweep):
    one_line_exit_2(capsys, tune_main(["--resume", str(finished_sweep.root), "--space", "batch_grid"]), "drop --space")


def test_resume_of_a_sweep_moved_since_it_was_written_is_refused_and_left_alone(capsys, finished_sweep, tmp_path):
    written_at = finished_sweep.root.resolve()
    finished_sweep.write_sweep_json({**finished_sweep.read_sweep_json(), "sweep_dir": str(written_at)})
    moved = written_at.rename(tmp_path / "moved")  # Tune's saved trials still name the old directory
    before = snapshot(moved)
    one_line_exit_2(capsys, tune_main(["--resume", str(moved)]), f"the sweep was written at {written_at}")
    assert snapshot(moved) == before


def test_resume_with_corrupt_sweep_json_is_refused_and_left_alone(capsys, finished_sweep):
    (finished_sweep.root / "sweep.json").write_text("{not json")
    before = snapshot(finished_sweep.root)
    one_line_exit_2(capsys, tune_main(["--resume", str(finished_sweep.root)]), "sweep.json is not valid JSON")
    assert snapshot(finished_sweep.root) == before


def test_existing_sweep_name_is_refused_not_overwritten(capsys, finished_sweep):
    before = snapshot(finished_sweep.root)
    code = tune_main(["--space", "batch_grid", "--name", "done", "--results-dir", str(finished_sweep.root.parent)])
    one_line_exit_2(capsys, code, "already has results")
    assert snapshot(finished_sweep.root) == before


@pytest.mark.parametrize("reader", ["query", "analysis"])
def test_a_corrupt_parquet_file_left_by_someone_else_is_named_not_a_traceback(capsys, finished_sweep, reader):
    (finished_sweep.root / "trials" / "intruder.parquet").write_bytes(b"PAR1 this is not parquet")
    before = snapshot(finished_sweep.root)
    if reader == "query":
        code = query_main(["SELECT count(*) FROM trials", "--results-dir", str(finished_sweep.root.parent)])
    else:
        code = analysis_main([str(finished_sweep.root)])
    one_line_exit_2(capsys, code, "intruder.parquet")
    assert snapshot(finished_sweep.root) == before


def test_an_address_nothing_answers_at_is_one_line_and_creates_nothing(capsys, tmp_path, closed_port):
    address = f"127.0.0.1:{closed_port}"
    code = tune_main(["--space", "batch_grid", "--address", address, "--results-dir", str(tmp_path / "r")])
    one_line_exit_2(capsys, code, f"Ray cluster {address}: nothing answers")
    assert not (tmp_path / "r").exists()
    one_line_exit_2(capsys, tune_main(["--space", "batch_grid", "--address", address, "--dry-run"]), "ray status")


def test_resume_of_a_sweep_whose_cluster_is_gone_is_one_line_and_leaves_it_alone(capsys, finished_sweep, closed_port):
    address = f"127.0.0.1:{closed_port}"
    finished_sweep.write_sweep_json({"sweep": "done", "trials": [], "cluster": {"address": address}})
    before = snapshot(finished_sweep.root)
    one_line_exit_2(capsys, tune_main(["--resume", str(finished_sweep.root)]), f"Ray cluster {address}")
    assert snapshot(finished_sweep.root) == before


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["run", "dry-run"])
def test_more_ranks_than_the_machine_can_run_is_one_line_and_starts_nothing(capsys, tmp_path, dry_run):
    code = tune_main(
        ["--space", "batch_grid", "--set", "num_workers=4096", "--results-dir", str(tmp_path / "r"), *dry_run]
    )
    one_line_exit_2(capsys, code, "num_workers=4096 x cpus_per_worker=1 is more than this machine can run")
    assert not (tmp_path / "r").exists()
