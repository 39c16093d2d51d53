"""``--find-max-batch`` on the command line: its flags, what a dry run says it would probe, and bad input."""

from __future__ import annotations

import pytest

import raysweep
from raysweep.api import resume_sweep
from raysweep.core.errors import UsageError
from raysweep.options import SweepOptions
from raysweep.planning.max_batch import SearchLimits
from raysweep.tune import parse_command
from tests.cli_helpers import no_sweep_starts, table_rows  # noqa: F401
from tests.cli_helpers import run_main as run_cli


@pytest.fixture
def results(tmp_path):
    return str(tmp_path / "results")


def test_the_flag_sets_search_limits_and_without_it_there_is_no_search():
    assert parse_command(["--space", "batch_grid"]).options.find_max_batch is None
    assert parse_command(["--space", "batch_grid", "--find-max-batch"]).options.find_max_batch == SearchLimits()
    limits = parse_command(
        ["--space", "batch_grid", "--find-max-batch", "--max-batch-probes", "4", "--max-batch-resolution", "8"]
    ).options.find_max_batch
    assert limits == SearchLimits(max_probes=4, resolution=8)


def test_dry_run_says_what_would_be_probed_and_starts_nothing(capsys, results):
    code, out, err = run_cli(
        capsys, "--space", "batch_grid", "--dry-run", "--find-max-batch", "--set", "engine=[ddp,deepspeed]",
        "--max-batch-probes", "5", "--results-dir", results,
    )  # fmt: skip
    assert code == 0, err
    assert len(table_rows(out)) == 10 * 3  # the space's trials and their repeats, before clipping
    assert (
        "find-max-batch: 2 configurations would be probed" in out
    )  # the repeats of a configuration probe once and "at most 5 probe trials" in out
    # one line per configuration, numbered in the order the (randomly ordered) first round meets them
    probes = sorted(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("  configuration "))
    assert probes == ["first probe at micro batch 16, grid [16, 32, 64, 128, 256]"] * 2
    assert {"engine=ddp", "engine=deepspeed"} == {
        line.split()[2].rstrip(":") for line in out.splitlines() if line.startswith("  configuration ")
    }
    assert "at most 30 trials after the search; dry run: nothing started." in out


def test_search_bounds_without_the_flag_are_refused(capsys, results):
    code, _, err = run_cli(capsys, "--space", "batch_grid", "--dry-run", "--max-batch-probes", "3")
    assert code == 2 and "only apply with --find-max-batch" in err


def test_a_bound_below_one_is_refused_naming_the_flag(capsys, results):
    code, _, err = run_cli(capsys, "--space", "batch_grid", "--find-max-batch", "--max-batch-resolution", "0")
    assert code == 2 and "--max-batch-resolution" in err and "got 0" in err


def test_a_fixed_global_batch_is_refused_before_anything_starts(capsys, results):
    code, _, err = run_cli(
        capsys, "--space", "batch_grid", "--find-max-batch", "--set", "global_batch=256", "--results-dir", results
    )
    assert code == 2 and "global_batch=256" in err and "set global_batch=0" in err


def test_the_api_honours_find_max_batch_refusing_a_fixed_global_batch_before_anything_is_written(tmp_path):
    results = tmp_path / "results"
    with pytest.raises(UsageError, match="global_batch=256"):
        raysweep.run_sweep(
            "batch_grid", overrides={"global_batch": 256}, results_dir=results, dashboard=False, find_max_batch=True
        )
    assert not results.exists()


def test_resuming_with_find_max_batch_a_sweep_that_never_searched_is_refused(tmp_path):
    sweep = tmp_path / "s"
    (sweep / "_tune").mkdir(parents=True)
    (sweep / "sweep.json").write_text("{}")
    with pytest.raises(UsageError, match="has no max_batch table; a resumed sweep keeps the trials"):
        resume_sweep(sweep, SweepOptions(find_max_batch=SearchLimits()))
