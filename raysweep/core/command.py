"""What every raysweep command line shares: a parser whose mistakes are one line, byte sizes with units, and the
one place where a command's errors become its message and exit code.

Each command (``raysweep.tune``, ``raysweep.query``, ``analysis``, ``trainers.make_arrays``, ...) builds its
parser with ``ArgumentParser`` and runs its body through ``run_command``; ``raysweep.cli`` and the
``python -m`` forms both call the command's ``main(argv)``. It lives in core because ``analysis`` and
``trainers`` may import only core.
"""

from __future__ import annotations

import argparse
import gc
import re
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from raysweep.core.errors import UsageError

# Exit codes: 0 done, 1 done with failed trials (the sweep's own verdict), 2 bad input. An interrupted sweep
# exits 130 or 143 (raysweep.interrupt); any other exception is a bug and propagates with its traceback.
EXIT_OK = 0
EXIT_USAGE = 2
ERROR_PREFIX = "raysweep: error: "


class ArgumentParser(argparse.ArgumentParser):
    """argparse, except that a mistake is a ``UsageError`` of one line pointing at ``--help`` (no usage block)."""

    def error(self, message: str):
        raise UsageError(f"{message} (see {self.prog} --help)")


def run_command(
    body: Callable[[Sequence[str] | None], int],
    argv: Sequence[str] | None,
    bad_input: tuple[type[Exception], ...] = (),
) -> int:
    """``body(argv)``'s exit code; a ``UsageError`` (or one of ``bad_input``, what the command counts as the
    user's mistake) is printed as ``raysweep: error: <one line>`` and exits ``EXIT_USAGE``."""
    try:
        return body(argv)
    except (UsageError, *bad_input) as error:
        print(ERROR_PREFIX + one_line(str(error)), file=sys.stderr)
        return EXIT_USAGE


def exit_process(code: int) -> NoReturn:
    """End a command's process with ``code``, without the interpreter's last full collection.

    That collection walks every object the process still holds (Ray's, pyarrow's, torch's: about a second after
    a sweep, most of a dry run's last half second) only to find them alive; frozen, they end with the process.
    For a command's ``__main__`` only: a caller that goes on (a test calling ``main``) keeps its collector.
    """
    gc.freeze()
    raise SystemExit(code)


def one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


# ---- byte sizes -------------------------------------------------------------------------------------------

UNITS = {
    "": 1,  # bytes
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}
UNIT_NAMES = "B, kB, MB, GB, TB, KiB, MiB, GiB, TiB"
BYTE_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*", re.IGNORECASE)


def parse_bytes(text: str) -> int:
    """A number of bytes from ``4096``, ``4MiB`` (4 x 2**20), ``4MB`` (4 x 10**6) or ``1.5GiB``: decimal units
    are powers of 1000, binary ones (KiB, MiB, ...) powers of 1024, the unit's case aside."""
    found = BYTE_SIZE.fullmatch(text)
    if found is None or found.group(2).lower() not in UNITS:
        raise ValueError(f"{text!r} is not a byte size: a number with an optional unit ({UNIT_NAMES}), e.g. 4MiB")
    number, unit = found.groups()
    scale = UNITS[unit.lower()]
    whole, _, fraction = number.partition(".")
    # Exact arithmetic: 1.5GiB is 1610612736 bytes, not a float's nearest neighbour of it.
    numerator = int(whole or "0") * 10 ** len(fraction) + int(fraction or "0")
    size, rest = divmod(numerator * scale, 10 ** len(fraction))
    if rest:
        raise ValueError(f"{text!r} is not a whole number of bytes")
    return size


def byte_size(text: str) -> int:
    """``parse_bytes`` as an argparse ``type``: a refusal names the flag (``argument --max-bytes: ...``)."""
    try:
        return parse_bytes(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
