"""What every command line shares (raysweep.core.command, raysweep.core.names): one-line argument errors that
point at --help, one mapping of errors to exit codes, byte sizes with units, and the closest names."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest

from raysweep.core.command import EXIT_USAGE, ArgumentParser, byte_size, exit_process, parse_bytes, run_command
from raysweep.core.errors import UsageError
from raysweep.core.names import closest, did_you_mean, unknown_name


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="python -m some.tool")
    p.add_argument("--space")
    p.add_argument("--max-bytes", type=byte_size)
    p.add_argument("--mode", choices=("min", "max"))
    return p


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--space"], "argument --space: expected one argument"),
        (["--nope"], "unrecognized arguments: --nope"),
        (["--mode", "mid"], "argument --mode: invalid choice: 'mid' (choose from 'min', 'max')"),
        (["--max-bytes", "lots"], "argument --max-bytes: 'lots' is not a byte size"),
    ],
)
def test_an_argument_mistake_is_one_usage_error_pointing_at_help(argv, message):
    with pytest.raises(UsageError) as e:
        parser().parse_args(argv)
    assert str(e.value).startswith(message)
    assert str(e.value).endswith(" (see python -m some.tool --help)")
    assert "\n" not in str(e.value) and "usage:" not in str(e.value)


def test_run_command_prints_a_usage_error_as_one_line_and_exits_2(capsys):
    def body(argv):
        parser().parse_args(argv)
        return 0

    assert run_command(body, ["--space"]) == EXIT_USAGE == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "raysweep: error: argument --space: expected one argument (see python -m some.tool --help)\n"


def test_run_command_maps_only_what_the_command_names_as_bad_input(capsys):
    def body(argv):
        raise OSError("disk full\nsecond line")

    assert run_command(body, [], bad_input=(OSError,)) == 2
    assert capsys.readouterr().err == "raysweep: error: disk full second line\n"
    with pytest.raises(OSError):  # anything else is a bug: it propagates with its traceback
        run_command(body, [])


def test_exit_process_exits_with_the_code_and_leaves_what_the_process_holds_to_its_end():
    try:
        with pytest.raises(SystemExit) as exited:
            exit_process(3)
        assert exited.value.code == 3 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()  # this test's process goes on


def test_a_commands_process_ends_through_exit_process_with_its_exit_code():
    """``python -m`` forms and the console script alike: a usage error still exits 2 with its one line."""
    for module in ("raysweep.query", "analysis.predict"):
        proc = subprocess.run([sys.executable, "-m", module, "--no-such-flag"], capture_output=True, text=True)
        assert proc.returncode == EXIT_USAGE and proc.stderr.startswith("raysweep: error: "), (module, proc.stderr)
    script = "from raysweep.cli import console_script; console_script()"
    proc = subprocess.run([sys.executable, "-c", script, "query", "--no-such-flag"], capture_output=True, text=True)
    assert proc.returncode == EXIT_USAGE and "(see python -m raysweep.query --help)" in proc.stderr, proc.stderr


def test_every_python_m_form_of_the_library_ends_through_exit_process():
    root = Path(__file__).resolve().parents[1]
    mains = [p for pkg in ("raysweep", "analysis", "trainers") for p in (root / pkg).rglob("*.py")
             if 'if __name__ == "__main__":' in p.read_text()]  # fmt: skip
    assert len(mains) >= 10
    assert all('if __name__ == "__main__":\n    exit_process(main())' in p.read_text() for p in mains), mains


def test_run_command_returns_the_body_exit_code():
    assert run_command(lambda argv: 1, []) == 1


# ---- byte sizes -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("4096", 4096),
        ("0", 0),
        ("4MiB", 4 * 1024 * 1024),
        ("4MB", 4_000_000),
        ("4mib", 4_194_304),
        ("1.5GiB", 1_610_612_736),
        ("1KiB", 1024),
        ("64 KiB", 65_536),
        ("2kB", 2000),
        ("1TiB", 1_099_511_627_776),
        ("10B", 10),
        (".5KiB", 512),
    ],
)
def test_byte_sizes_known_answers(text, size):
    assert parse_bytes(text) == size


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("lots", "is not a byte size"),
        ("4XB", "is not a byte size"),
        ("-4MiB", "is not a byte size"),
        ("4 MiB B", "is not a byte size"),
        ("", "is not a byte size"),
        ("1.5B", "is not a whole number of bytes"),
        ("0.1KiB", "is not a whole number of bytes"),
    ],
)
def test_garbage_is_not_a_byte_size(text, reason):
    with pytest.raises(ValueError, match=reason):
        parse_bytes(text)


def test_a_bad_byte_size_flag_is_one_line_naming_the_flag():
    with pytest.raises(UsageError) as e:
        parser().parse_args(["--max-bytes", "4XB"])
    assert str(e.value) == (
        "argument --max-bytes: '4XB' is not a byte size: a number with an optional unit "
        "(B, kB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 4MiB (see python -m some.tool --help)"
    )


# ---- closest names ----------------------------------------------------------------------------------------


def test_closest_names_are_the_near_ones_only():
    params = ["num_workers", "cpus_per_worker", "micro_batch_per_worker", "epochs"]
    assert closest("num_worker", params) == ["num_workers"]  # not cpus_per_worker, further behind
    assert closest("cifar1", ["digits", "cifar10", "cifar100"]) == ["cifar10", "cifar100"]
    assert closest("sdg", ["adamw", "sgd", "lamb"]) == ["sgd"]
    assert closest("megatron", ["deepspeed", "ddp", "fsdp"]) == []


def test_did_you_mean_is_empty_where_nothing_is_close():
    assert did_you_mean("fsdpp", ["deepspeed", "fsdp"]) == "; did you mean 'fsdp'?"
    assert did_you_mean("xyz", ["deepspeed", "fsdp"]) == ""


def test_unknown_name_lists_a_few_names_and_points_at_the_listing_of_many():
    assert unknown_name("search", "optna", ["grid", "random", "optuna"]) == (
        "unknown search 'optna'; did you mean 'optuna'? (one of grid, random, optuna)"
    )
    many = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()
    assert unknown_name("letter", "gamm", many) == "unknown letter 'gamm'; did you mean 'gamma'?"  # not all 18
    assert unknown_name("trial parameter", "epoch", ["epochs", "seed"], "--list-params") == (
        "unknown trial parameter 'epoch'; did you mean 'epochs'? (all: --list-params)"
    )
