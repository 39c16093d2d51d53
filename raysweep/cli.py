"""``raysweep COMMAND [ARGS ...]``: the one front door to raysweep's commands.

Every command is a module's ``main(argv)`` with the module's own parser; ``python -m <module>`` calls the same
function, so ``raysweep run --space batch_grid`` and ``python -m raysweep.tune --space batch_grid`` are one
command with one set of flags. A command's module is imported only when it runs (named here by its dotted name):
``raysweep --help`` starts no torch and no Ray, and naming the benchmarks here does not make the library import
them. Errors end every command the same way (``raysweep.core.command.run_command``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import NoReturn

from raysweep.core.command import ArgumentParser, exit_process, run_command
from raysweep.core.errors import UsageError
from raysweep.core.names import unknown_name


@dataclass(frozen=True)
class Command:
    """A subcommand: the module whose ``main(argv)`` runs it (also ``python -m <alias>``) and its one line."""

    module: str
    summary: str
    alias: str = ""  # the python -m form, where it is not the module's own name

    @property
    def python_m(self) -> str:
        return f"python -m {self.alias or self.module}"


COMMANDS: dict[str, Command] = {
    "run": Command("raysweep.tune", "run a search space as a Ray Tune sweep of ViT trials"),
    "query": Command("raysweep.query", "DuckDB SQL over the sweeps' trials, epochs and ranks tables"),
    "report": Command("analysis.__main__", "write a sweep's report, or one report comparing sweeps", "analysis"),
    "predict": Command(
        "analysis.prediction.predict",
        "predict a sweep's scaling on M nodes of G ranks from its 1-rank trials",
        "analysis.predict",
    ),
    "probe": Command("raysweep.probe", "time the cluster's collectives; fit a latency and bandwidth per link"),
    "bench": Command("raysweep.bench.stack", "the full stack against hand-written PyTorch", "raysweep.bench"),
    "bench-floor": Command("raysweep.bench.floor", "the cold-process floor of a rank's start-up"),
    "bench-input": Command("raysweep.bench.input_pipeline", "the image-folder input pipeline alone, on one rank"),
    "bench-jpeg": Command("raysweep.bench.jpeg_decode", "the image folder's JPEG decoder against torchvision's"),
    "make-arrays": Command("trainers.make_arrays", "write a folder of scientific arrays for dataset=arrays"),
}


def commands_text() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {c.summary} ({c.python_m})" for name, c in COMMANDS.items()]
    return "commands:\n" + "\n".join(lines) + "\n\nraysweep COMMAND --help lists a command's own arguments."


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="raysweep",
        usage="raysweep [-h] COMMAND [ARGS ...]",
        description="Ray Tune sweeps of data-parallel ViT training, their Parquet results and their analysis.",
        epilog=commands_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # Only what comes before COMMAND is parsed here: the command's own arguments (ARGS) go to it untouched.
    parser.add_argument("command", metavar="COMMAND", help="one of the commands below; ARGS are its own arguments")
    return parser


def dispatch(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0].startswith("-"):
        build_parser().parse_args(argv)  # --help prints and exits; anything else is a one-line error
    name, rest = argv[0], argv[1:]  # the rest goes to the command untouched ("--" included)
    if name not in COMMANDS:
        raise UsageError(unknown_name("command", name, COMMANDS))
    return import_module(COMMANDS[name].module).main(rest)


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(dispatch, argv)


def console_script() -> NoReturn:
    """The ``raysweep`` executable: ``main`` as its process's whole life, ended by ``exit_process``."""
    exit_process(main())


if __name__ == "__main__":
    exit_process(main())
