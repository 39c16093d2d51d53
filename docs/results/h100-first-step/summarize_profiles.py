"""Writes the figures of the rank's profiles and import tree into ``summary-profiles.csv`` (source, record,
quantity, value: the long table ``docs/figures/`` reads), so that the profiles themselves can leave the tree.

    python docs/results/h100-first-step/summarize_profiles.py DIR    # DIR holds profile*.txt, importtime.txt.gz

The profiles have left the tree; git history keeps them: ``git archive d39067f docs/results/h100-first-step |
tar -x -C /tmp/x`` gives DIR = ``/tmp/x/docs/results/h100-first-step``.

From each cProfile output (``profile1.txt``, ``profile2.txt``; records its sections, ``engine build`` and
``first step``): its total seconds, the
calls and seconds of ``builtins.compile`` (modules compiled from source) and the cumulative seconds of
DeepSpeed's broadcasts; from ``python -X importtime``'s tree (record ``import``): the cumulative seconds of the
packages the README names.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import re
from pathlib import Path

TOTAL = re.compile(r"function calls .* in (?P<seconds>[\d.]+) seconds")
ROW = re.compile(r"^\s*(?P<ncalls>[\d/]+)\s+[\d.]+\s+[\d.]+\s+(?P<cumtime>[\d.]+)\s+[\d.]+\s+(?P<where>.+)$")
IMPORT = re.compile(r"^import time:\s+\d+ \|\s+(?P<cumulative>\d+) \|\s*(?P<package>\S+)$")
PACKAGES = ("timm", "timm.layers._fx", "torchvision", "torch._dynamo", "sympy", "torch")


def profile_rows(text: str) -> list[tuple[str, str, float]]:
    """Each ``==== name`` section's (record: the name) first figures; a section lists its calls twice (by
    cumulative and by own time), the first listing is read."""
    found: dict[tuple[str, str], float] = {}
    section = ""
    for line in text.splitlines():
        if line.startswith("==== "):
            section = line[5:].strip()
        elif m := TOTAL.search(line):
            found.setdefault((section, "seconds"), float(m["seconds"]))
        elif m := ROW.match(line):
            if m["where"] == "{built-in method builtins.compile}":
                found.setdefault((section, "compile calls"), float(m["ncalls"]))
                found.setdefault((section, "compile s"), float(m["cumtime"]))
            elif m["where"].endswith("deepspeed/comm/comm.py:240(broadcast)"):
                found.setdefault((section, "deepspeed broadcast s"), float(m["cumtime"]))
    return [(record, quantity, value) for (record, quantity), value in found.items()]


def import_rows(text: str) -> list[tuple[str, str, float]]:
    """The first (outermost) entry of each named package: its cumulative import seconds."""
    seen: dict[str, float] = {}
    for line in text.splitlines():
        if (m := IMPORT.match(line)) and m["package"] in PACKAGES and m["package"] not in seen:
            seen[m["package"]] = int(m["cumulative"]) / 1e6
    return [("import", f"{package} s", seen[package]) for package in PACKAGES if package in seen]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("summary-profiles.csv"))
    args = parser.parse_args(argv)
    rows = []
    for profile in sorted(args.dir.glob("profile*.txt")):
        rows += [(profile.stem, *row) for row in profile_rows(profile.read_text())]
    with gzip.open(args.dir / "importtime.txt.gz", "rt") as f:
        rows += [("importtime", *row) for row in import_rows(f.read())]
    with open(args.out, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["source", "record", "quantity", "value"])
        writer.writerows(rows)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
