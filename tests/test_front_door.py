"""``raysweep COMMAND`` (raysweep.cli): it lists and runs every command, the ``python -m`` forms stay the same
commands, argument mistakes are one line, and the probe's and the predictor's own command lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from raysweep.cli import COMMANDS, main
from raysweep.core.store import ResultStore
from raysweep.probe import DEFAULT_NAME, links_path, parse_args
from tests.cli_helpers import no_sweep_starts  # noqa: F401

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("raysweep", "trainers", "analysis")


def python(*argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def python_m_targets() -> set[str]:
    """Every ``python -m X`` the source offers: a module with a ``__main__`` guard, a package with __main__.py."""
    targets = set()
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            module = ".".join(path.relative_to(REPO).with_suffix("").parts)
            if path.name == "__main__.py":
                targets.add(module.removesuffix(".__main__"))
            elif 'if __name__ == "__main__":' in path.read_text():
                targets.add(module)
    return targets


def test_every_python_m_entry_is_a_command_of_the_front_door():
    offered = {name for command in COMMANDS.values() for name in (command.module, command.alias)}
    # python -m raysweep is python -m raysweep.tune (the run command); raysweep.cli is the front door itself.
    assert python_m_targets() - offered == {"raysweep", "raysweep.cli"}


def test_help_lists_every_command_with_its_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    listed = re.findall(r"^  ([a-z-]+)  +(\S.*)$", out.split("commands:\n")[1], re.MULTILINE)
    assert [name for name, _ in listed] == list(COMMANDS)
    assert {"run", "query", "report", "predict", "probe", "bench", "make-arrays"} <= set(COMMANDS)
    for (name, line), command in zip(listed, COMMANDS.values()):
        assert line == f"{command.summary} ({command.python_m})", name


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_help_is_its_module_help(capsys, name):
    with pytest.raises(SystemExit) as e:
        main([name, "--help"])
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: {COMMANDS[name].python_m} ")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_says_an_argument_mistake_in_one_line_pointing_at_its_help(capsys, name):
    assert main([name, "--no-such-flag"]) == 2
    out, err = capsys.readouterr()
    (line,) = err.splitlines()
    assert out == ""
    assert line.startswith("raysweep: error: ") and line.endswith(f" (see {COMMANDS[name].python_m} --help)")


def test_the_mission_command_missing_its_value_is_one_line(capsys):
    assert main(["run", "--space"]) == 2
    expected = "raysweep: error: argument --space: expected one argument (see python -m raysweep.tune --help)\n"
    assert capsys.readouterr().err == expected


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["rn"], "raysweep: error: unknown command 'rn'; did you mean 'run'? (one of " + ", ".join(COMMANDS) + ")"),
        ([], "raysweep: error: the following arguments are required: COMMAND (see raysweep --help)"),
    ],
)
def test_no_or_an_unknown_command_is_one_line(capsys, argv, line):
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [line]


def test_python_m_and_the_front_door_are_one_command(tmp_path):
    alias = python("-m", "raysweep.tune", "--list-spaces", cwd=tmp_path)
    door = python("-m", "raysweep.cli", "run", "--list-spaces", cwd=tmp_path)
    assert alias.returncode == door.returncode == 0, (alias.stderr, door.stderr)
    assert "batch_grid" in alias.stdout
    assert door.stdout == alias.stdout
    assert list(tmp_path.iterdir()) == []


def test_python_m_analysis_predict_runs_without_runpy_warning():
    proc = python("-m", "analysis.predict", "--help")
    assert proc.returncode == 0
    assert proc.stdout.startswith("usage: python -m analysis.predict ")
    assert proc.stderr == ""  # runpy warns where importing the package analysis had imported analysis.predict


def test_the_package_analysis_still_offers_its_functions():
    import analysis

    assert callable(analysis.analyze) and callable(analysis.compare)
    assert issubclass(analysis.AnalysisError, Exception)


# ---- the probe's command line --------------------------------------------------------------------------


def test_the_probe_writes_its_table_once_under_its_directory():
    options = parse_args([])
    path = links_path(ResultStore(options.results_dir, options.name))
    assert path == Path("raysweep-results") / DEFAULT_NAME / "links" / "links.parquet"
    assert path.parts.count("links") == 1


def test_a_probe_into_a_sweep_writes_where_the_report_reads():
    options = parse_args(["--results-dir", "r", "--name", "batch_grid-1"])
    assert links_path(ResultStore(options.results_dir, options.name)) == Path("r/batch_grid-1/links/links.parquet")


@pytest.mark.parametrize(("text", "size"), [("4MiB", 4 << 20), ("4MB", 4_000_000), ("4096", 4096)])
def test_the_probe_takes_byte_sizes_with_units(text, size):
    options = parse_args(["--min-bytes", "1KiB", "--max-bytes", text])
    assert (options.plan.min_bytes, options.plan.max_bytes) == (1024, size)


def test_the_probe_refuses_a_bad_size_in_one_line_naming_the_flag(capsys):
    assert main(["probe", "--max-bytes", "4 gigs"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("raysweep: error: argument --max-bytes: '4 gigs' is not a byte size")


def test_the_probe_names_the_closest_collective(capsys):
    assert main(["probe", "--collectives", "all_reduce,allgather"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("raysweep: error: --collectives: unknown collective 'allgather'; did you mean 'all_gather'?")
