"""The command line, in-process: help and listings, dry runs, and one-line errors for bad input (exit 2)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import torch

from raysweep.core.params import TrialParams
from raysweep.planning.space import SPACES_DIR
from raysweep.tune import main
from tests.cli_helpers import no_sweep_starts, table_rows  # noqa: F401
from tests.cli_helpers import run_main as run_cli

REPO = Path(__file__).resolve().parents[1]
HAS_GPU = torch.cuda.device_count() > 0


@pytest.fixture
def results(tmp_path):
    return tmp_path / "results"


# ---- help and listings ------------------------------------------------------------------------


def documented_options() -> set[str]:
    """Every ``--flag`` named in the first column of the option table in docs/running.md."""
    lines = (REPO / "docs" / "running.md").read_text().splitlines()
    start = lines.index("| option | meaning |")
    flags = set()
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        flags.update(re.findall(r"`(--[a-z][a-z-]*)", line.split(" | ")[0]))
    return flags


def help_options(out: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", out)) - {"--help"}


def test_help_lists_exactly_the_options_of_the_documented_table(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    documented, offered = documented_options(), help_options(capsys.readouterr().out)
    assert documented, "docs/running.md's option table was not found"
    assert offered - documented == set(), "in --help but not in docs/running.md's option table"
    assert documented - offered == set(), "in docs/running.md's option table but not in --help"


def test_list_spaces_lists_every_bundled_space(capsys, results):
    code, out, err = run_cli(capsys, "--list-spaces", "--results-dir", str(results))
    assert code == 0 and err == ""
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert "batch_grid" in names
    assert sorted(names) == sorted(p.stem for p in SPACES_DIR.glob("*.yaml"))
    assert not results.exists()


def test_list_params_lists_every_trial_parameter(capsys):
    code, out, _ = run_cli(capsys, "--list-params")
    assert code == 0
    listed = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert listed == [f.name for f in dataclasses.fields(TrialParams)]
    assert "data-parallel ranks" in out  # with each field's doc


# ---- dry runs -----------------------------------------------------------------------------------


@pytest.mark.skipif(HAS_GPU, reason="expects this machine's CPU-only plan")
def test_dry_run_of_batch_grid_prints_five_cpu_trials_three_times_and_creates_nothing(capsys, results):
    code, out, err = run_cli(capsys, "--space", "batch_grid", "--dry-run", "--results-dir", str(results))
    assert code == 0, err
    rows = table_rows(out)
    assert [r["repeat"] for r in rows] == [str(k) for k in range(3) for _ in range(5)]
    rounds = [[int(r["micro_batch_per_worker"]) for r in rows if r["repeat"] == str(k)] for k in range(3)]
    assert [sorted(r) for r in rounds] == [[16, 32, 64, 128, 256]] * 3
    assert rounds != [[16, 32, 64, 128, 256]] * 3, "each round runs in a seeded random order"
    assert {(r["device"], r["precision"], r["num_workers"]) for r in rows} == {("cpu", "fp32", "1")}
    assert "15 trials; dry run: nothing started." in out
    assert not results.exists()


def test_dry_run_assuming_8_gpus_plans_gpu_bf16_trials(capsys, results):
    code, out, err = run_cli(
        capsys,
        "--space", "batch_grid", "--dry-run", "--assume-gpus", "8",
        "--model", "vit_base_patch16_224", "--dataset", "synthetic", "--set", "num_workers=[1,2,4,8]",
        "--repeats", "1",
        "--set", "image_size=224", "--results-dir", str(results),
    )  # fmt: skip
    assert code == 0, err
    assert "8 GPU" in out
    rows = table_rows(out)
    assert len(rows) == 5 * 4
    assert {r["num_workers"] for r in rows} == {"1", "2", "4", "8"}
    for r in rows:
        assert (r["device"], r["precision"], r["model"], r["dataset"]) == (
            "gpu", "bf16", "vit_base_patch16_224", "synthetic",
        )  # fmt: skip
        assert "GPU" in r["needs"]
        assert int(r["global_batch"]) == int(r["num_workers"]) * int(r["micro_batch_per_worker"])
    assert "20 trials; dry run: nothing started." in out
    assert not results.exists()


def test_dry_run_of_a_user_space_file(capsys, tmp_path, results):
    path = tmp_path / "mine.yaml"
    path.write_text("description: two\naxes: {grad_accum_steps: [1, 2]}\nfixed: {micro_batch_per_worker: 8}\n")
    code, out, err = run_cli(capsys, "--space", str(path), "--dry-run", "--results-dir", str(results))
    assert code == 0, err
    assert [r["global_batch"] for r in table_rows(out)] == ["8", "16"]


def test_set_reads_off_as_a_word_not_a_boolean(capsys, results):
    code, out, err = run_cli(
        capsys, "--space", "batch_grid", "--repeats", "1", "--set", "prepare=[off,pixels]",
        "--set", "micro_batch_per_worker=8", "--dry-run", "--results-dir", str(results),
    )  # fmt: skip
    assert code == 0, err
    assert "2 trials; dry run" in out


# ---- bad input: one line on stderr, exit 2, nothing created -------------------------------------


def assert_usage_error(capsys, results, argv: list[str], fragment: str) -> None:
    code, out, err = run_cli(capsys, *argv, "--results-dir", str(results))
    lines = err.splitlines()
    assert code == 2, (code, out, err)
    assert len(lines) == 1, err
    assert lines[0].startswith("raysweep: error:")
    assert fragment in lines[0]
    assert out == ""
    assert not results.exists()


# Refused before Ray starts: options and values.
BAD_INPUT = {
    "unknown space": (["--space", "no_such_space"], "unknown space 'no_such_space' (all: --list-spaces"),
    "misspelt space": (["--space", "batch_grd"], "unknown space 'batch_grd'; did you mean 'batch_grid'"),
    "zero micro batch": (
        ["--space", "batch_grid", "--set", "micro_batch_per_worker=0"],
        "micro_batch_per_worker must be a positive integer, got 0",
    ),
    "non-numeric micro batch": (
        ["--space", "batch_grid", "--set", "micro_batch_per_worker=abc"],
        "micro_batch_per_worker must be an integer, got 'abc'",
    ),
    "zero epochs": (["--space", "batch_grid", "--epochs", "0"], "epochs must be a positive integer"),
    "set without =": (["--space", "batch_grid", "--set", "epochs"], "--set 'epochs': expected KEY=VALUE"),
    "set unknown key": (
        ["--space", "batch_grid", "--set", "num_worker=2"],
        "unknown trial parameter 'num_worker'; did you mean 'num_workers'? (all: --list-params)",
    ),
    "bf16 on cpu": (
        ["--space", "batch_grid", "--set", "device=cpu", "--set", "precision=bf16"],
        "precision=bf16 needs a GPU",
    ),
    "non-loopback dashboard": (
        ["--space", "batch_grid", "--dashboard-host", "0.0.0.0"],
        "--dashboard-host 0.0.0.0 would expose the Ray dashboard",
    ),
    "sweep name with ../": (["--space", "batch_grid", "--name", "../escape"], "sweep name '../escape' is not allowed"),
    "negative max concurrent": (
        ["--space", "batch_grid", "--max-concurrent-trials", "-1"],
        "--max-concurrent-trials must be >= 0",
    ),
    "no space": ([], "--space is required"),
    # never trains, and known from the values and the model's declared shape before Ray starts
    "nan learning rate": (["--space", "batch_grid", "--set", "lr=nan"], "lr must be a finite number, got nan"),
    "infinite weight decay": (
        ["--space", "batch_grid", "--set", "weight_decay=.inf"],
        "weight_decay must be a finite number, got inf",
    ),
    # the patch size read off a mistyped name (patch16 > image_size 8) does not get the image size blamed
    "misspelt model": (
        ["--space", "batch_grid", "--model", "vit_base_patch16_244"],
        "nor a timm model; did you mean 'vit_base_patch16_224'",
    ),
    "misspelt engine": (
        ["--space", "batch_grid", "--set", "engine=fsdpp"],
        "engine='fsdpp' is not one of deepspeed, ddp, fsdp, accelerate, megatron; did you mean 'fsdp'?",
    ),
    "image smaller than a patch": (
        ["--space", "batch_grid", "--set", "image_size=3"],
        "image_size=3 is smaller than the 4-pixel patches of model=vit_micro_patch4_32",
    ),
    "sequence parallel with ZeRO-3": (
        ["--space", "batch_grid", "--set", "num_workers=2", "--set", "sequence_parallel=2", "--set", "zero_stage=3"],
        "sequence_parallel=2 supports zero_stage in (0, 1, 2), got zero_stage=3",
    ),
    "megatron on CPU ranks": (
        ["--space", "batch_grid", "--set", "engine=megatron"],
        "engine=megatron needs CUDA GPUs and the megatron extra (pip install raysweep[megatron]): set device=gpu",
    ),
    "tensor parallel over 3 heads": (
        ["--space", "batch_grid", "--set", "num_workers=2", "--set", "tensor_parallel=2", "--set", "engine=ddp"],
        "tensor_parallel=2 does not divide the 3 attention heads of model=vit_micro_patch4_32",
    ),
}


# Refused by planning: models, datasets, data files and what the cluster holds. A dry run plans
# without Ray; a sweep plans on its started cluster (tests/integration/test_bad_cluster.py runs one).
PLANNING_ERRORS = {
    "unknown model": (["--space", "batch_grid", "--model", "vit_nope_xyz"], "model='vit_nope_xyz'"),
    "unknown dataset": (["--space", "batch_grid", "--dataset", "imagenet21k"], "dataset='imagenet21k'"),
    "misspelt dataset": (["--space", "batch_grid", "--dataset", "cifar1"], "did you mean 'cifar10' or 'cifar100'?"),
    "missing cifar data dir": (
        ["--space", "batch_grid", "--dataset", "cifar10", "--data-dir", "/nonexistent"],
        "data_dir /nonexistent is not a directory",
    ),
}


@pytest.mark.parametrize(("argv", "fragment"), list(BAD_INPUT.values()), ids=list(BAD_INPUT))
@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
def test_bad_input_is_one_line_exit_2_and_creates_nothing(capsys, monkeypatch, results, argv, fragment, dry_run):
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    assert_usage_error(capsys, results, argv + (["--dry-run"] if dry_run else []), fragment)


@pytest.mark.parametrize(("argv", "fragment"), list(PLANNING_ERRORS.values()), ids=list(PLANNING_ERRORS))
def test_input_planning_refuses_is_one_line_exit_2_in_a_dry_run(capsys, results, argv, fragment):
    assert_usage_error(capsys, results, [*argv, "--dry-run"], fragment)


def test_malformed_yaml_file_names_the_file_and_line(capsys, tmp_path, results):
    path = tmp_path / "broken.yaml"
    path.write_text("axes:\n  num_workers: [1, 2\nfixed: {}\n")
    assert_usage_error(capsys, results, ["--space", str(path)], f"{path}: not valid YAML at line")


def test_unknown_axis_in_a_yaml_file_is_named(capsys, tmp_path, results):
    path = tmp_path / "typo.yaml"
    path.write_text("axes:\n  micro_batch: [16, 32]\n")
    assert_usage_error(capsys, results, ["--space", str(path)], "unknown trial parameter 'micro_batch'")


def test_missing_yaml_file_is_named(capsys, tmp_path, results):
    assert_usage_error(capsys, results, ["--space", str(tmp_path / "nope.yaml")], "nope.yaml does not exist")


@pytest.mark.skipif(HAS_GPU, reason="needs a machine without GPUs")
def test_a_dry_run_of_trials_needing_more_gpus_than_the_machine_has_is_refused(capsys, results):
    assert_usage_error(
        capsys,
        results,
        ["--space", "batch_grid", "--set", "device=gpu", "--dry-run"],
        "a trial needs 1 x (1 CPU + 1 GPU) PACK but the cluster has",
    )


def test_results_dir_that_is_a_file_is_rejected_and_left_alone(capsys, tmp_path):
    path = tmp_path / "results"
    path.write_text("not a directory")
    code, out, err = run_cli(capsys, "--space", "batch_grid", "--results-dir", str(path))
    assert code == 2 and out == ""
    assert err.splitlines() == [f"raysweep: error: --results-dir {path} is a file, not a directory"]
    assert path.read_text() == "not a directory"


@pytest.mark.parametrize(("host", "auth"), [("localhost", None), ("::1", None), ("0.0.0.0", "token")])
def test_loopback_dashboard_host_or_token_auth_is_accepted(capsys, monkeypatch, results, host, auth):
    if auth:
        monkeypatch.setenv("RAY_AUTH_MODE", auth)
    else:
        monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    code, _, err = run_cli(
        capsys, "--space", "batch_grid", "--dry-run", "--dashboard-host", host, "--results-dir", str(results)
    )
    assert code == 0, err


def test_cifar_without_any_data_dir_is_a_usage_error(capsys, results):
    assert_usage_error(capsys, results, ["--space", "batch_grid", "--dataset", "cifar100"], "needs data_dir")


def test_probe_links_is_an_option_of_the_sweep_off_by_default():
    from raysweep.tune import parse_command

    assert parse_command(["--space", "batch_grid", "--probe-links"]).options.probe_links is True
    assert parse_command(["--space", "batch_grid"]).options.probe_links is False
