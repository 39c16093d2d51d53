"""Writes an experiment's figures from the terminal output and logs it committed into one long table: one
row per figure, so that the logs themselves can leave the tree (git history keeps them) and the docs'
figures are rendered from the table (``python docs/render.py``).

    PYTHONPATH=. python docs/results/summarize_logs.py docs/results/<experiment> [--out summary.csv]

Columns: ``source`` (the log, relative to the experiment, without ``.log``), ``record`` (which run, trial,
round or line of it), ``quantity`` and ``value`` (a number). What it reads, line by line:

* a JSON object (a bench's or probe's result; nested objects flattened as ``outer.inner``), its record the
  text before it on the line, else its ``mode``/``eager``/``round`` field, else its line number;
* ``docs/results/cpu-early-group/ab.sh``'s table: ``base 1 ... exited 67.2 s after launch``, each arm's
  ``metric: median m (lo-hi) runs [...]`` (quantities ``metric``, ``metric median/min/max``; records
  ``base 1``, ``base 2``, ... for the runs) and ``paired metric, base - new: [...]`` (record ``base - new 1``, ...);
* a run script's economy line (``table.txt``): ``new1 setup_s [5.66, 0.37] teardown_s [...] wall_s 81.1 duty 0.877 |
  launch to first step 31.0 ... | first trial's phases {...}`` (record: the run's tag; a list's items as
  ``setup_s[0]``, ``setup_s[1]``, ...), or ``first1 trial 0 mb 64 img/s 2026.1 ...`` (record: the tag and line);
* ``gaps.py``'s seconds per trial (``gaps.txt``): ``new1: wall 73.91 s, of which``, then its table (records
  ``new1 trial 0``, ...);
* ``diag.py``'s bytecode census (``diag.txt``): ``<path>/torch: 0 of 2141 modules with current bytecode``
  (record: the package; quantities ``modules``, ``current``);
* ``timeline.py``'s process starts (``timeline.txt``): a run's header ``base-1: seconds after launch`` (its
  tag the record), then ``14.82  process started: TrainController`` lines (the quantity: the rest of the line);
* the bench's result lines, ``input pipeline alone, decode cpu: 6317 img/s = 2.34 x the model (2699 img/s)``
  and ``full stack: 2657 img/s = 0.984 x synthetic, data_wait_fraction 0.0002`` (record: the label;
  quantities ``img/s``, ``ratio``, ``data_wait_fraction``);
* the bench's floor line, ``cold-process floor (batch 256): 29.6 s to the first step's end; phases end at s:
  import torch 5.1, ...`` (record ``cold-process floor``; quantities the phases, ``first step``);
* a table of columns two or more spaces apart under a header of names (the bench's ``batch  compile  plain img/s
  ...``; record: the first column's name and value, and the second's where it is not a number);
* ``python -m raysweep.tune``'s closing trial table (record: the trial id) and its line
  ``N trials in X s; duty cycle D (F from launch), median setup S s``;
* a name and its seconds, ``import torch   4.73 s`` (the cold-process floor), or a stage's
  ``median  low-high`` (the readers' stage tables);
* ``label number [unit]`` pairs separated by commas (``import ray 0.9 s, ray.init 5.8 s, ready 16.1 s after``),
  a line's leading words its record.
Everything else (progress lines, Ray's and the workers' messages) is left out.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from pathlib import Path

NUMBER = r"-?\d+(?:\.\d+)?(?:e-?\d+)?"
AB_RUN = re.compile(rf"^(?P<arm>base|new) (?P<run>\d+) rc=\d+ exited (?P<value>{NUMBER}) s after launch$")
# an older ab.sh: "base (first setup_s, ...) per run: [(15.76, 0.6, ...), ...]" or "base {1: (26.78, ...), ...}"
AB_ARM = re.compile(r"^(?P<arm>base|new)(?: \((?P<names>[^)]*)\) per run: (?P<tuples>\[.*\])| (?P<keyed>\{.*\}))?$")
OLD_AB_NAMES = "first setup_s, second setup_s, wall_s, duty_cycle"
RANGE = rf"(?P<median>{NUMBER}) \(?(?P<low>{NUMBER})-(?P<high>{NUMBER})\)?"
AB_METRIC = re.compile(rf"^\s+(?P<metric>.+?): median {RANGE}(?: runs (?P<runs>\[.*\]))?$")
AB_PAIRED = re.compile(r"^paired (?P<metric>.+?),? base - new: (?P<runs>\[.*\])$")
SWEEP_END = re.compile(
    rf"^(?P<trials>\d+) trials in (?P<wall>{NUMBER}) s; duty cycle (?P<duty>{NUMBER})"
    rf"(?: \((?P<launch>{NUMBER}) from launch\))?, median setup (?P<setup>{NUMBER}) s"
)
NAMED_SECONDS = re.compile(rf"^(?P<name>[A-Za-z][\w .,+/()'-]*?)\s{{2,}}(?P<value>{NUMBER})(?: s)?$")
STAGE = re.compile(
    rf"^(?P<name>[A-Za-z][\w .,+/()'-]*?)\s{{2,}}(?P<median>{NUMBER})\s+(?P<low>{NUMBER})-(?P<high>{NUMBER})$"
)
PART = re.compile(rf"^(?P<head>[A-Za-z][\w .'/+:-]*? |)(?P<value>{NUMBER})(?: (?P<unit>s|bytes|ms|GiB))?(?: after)?$")


def numbers(listed: str | None) -> list[float]:
    """``[0.361, 0.337]`` or, as an older ab.sh printed them, ``[np.float64(18.095), ...]``."""
    return [float(x) for x in re.findall(NUMBER, re.sub(r"np\.float64\((.*?)\)", r"\1", listed or ""))]


def flatten(obj: dict, prefix: str = "") -> list[tuple[str, float]]:
    out = []
    for key, value in obj.items():
        if isinstance(value, dict):
            out += flatten(value, f"{prefix}{key}.")
        elif isinstance(value, (int, float)):  # a flag (compile, eager) as 1 or 0
            out.append((f"{prefix}{key}", float(value)))
        elif isinstance(value, list) and value and all(isinstance(v, (int, float)) for v in value):
            out += [(f"{prefix}{key}[{i}]", v) for i, v in enumerate(value)]
    return out


def json_rows(line: str, number: int) -> list[tuple[str, str, float]] | None:
    start = line.find("{")
    if start < 0 or not line.rstrip().endswith("}"):
        return None
    try:
        obj = json.loads(line[start:])
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    record = line[:start].strip()
    for key in ("mode", "eager", "round"):
        if not record and key in obj:
            record = f"{key} {obj[key]}"
    record = f"{record} (line {number})" if record else f"line {number}"
    return [(record, quantity, value) for quantity, value in flatten(obj)]


ECONOMY = re.compile(r"^(?P<tag>\w+) (?P<rest>(?:setup_s \[|trial \d|b\d+ ).*)$")
KEY_VALUE = re.compile(rf"(?P<key>[A-Za-z][\w/' ]*?) (?P<value>\[[^\]]*\]|\{{.*\}}|{NUMBER})(?= |$)")


def economy_rows(line: str, number: int) -> list[tuple[str, str, float]]:
    """A run script's economy line: its tag, then ``key value`` pairs, lists and one JSON object among them."""
    m = ECONOMY.match(line.strip())
    if not m:
        return []
    record = m["tag"] if "setup_s [" in line else f"{m['tag']} (line {number})"
    rows = []
    for piece in m["rest"].split(" | "):
        for kv in KEY_VALUE.finditer(piece.strip()):
            key, value = kv["key"].strip(), kv["value"]
            if value.startswith("{"):
                rows += [(record, f"{key}.{q}", v) for q, v in flatten(json.loads(value))]
            elif value.startswith("["):
                rows += [(record, f"{key}[{i}]", v) for i, v in enumerate(numbers(value))]
            else:
                rows.append((record, key, float(value)))
    return rows


TIMELINE_RUN = re.compile(
    rf"^(?P<tag>[\w-]+): (?:seconds after launch|CLI launch at (?P<launch>{NUMBER}) s|wall (?P<wall>{NUMBER}) s)"
)
TIMELINE_EVENT = re.compile(rf"^\s+\+?(?P<value>{NUMBER})(?: s)?\s+(?P<event>\S.*)$")


def labelled_values(line: str) -> list[tuple[str, str, float]]:
    """``plain  import ray 0.9 s, ray.init 5.8 s, ready 16.1 s after`` (record: the first word) or
    ``after a thread: 67108864 bytes, 2.59 s`` (record: before the colon; quantities: the units)."""
    parts = [PART.match(part.strip()) for part in line.strip().split(", ")]
    if not all(parts) or not parts[0]["head"]:
        return []
    head = parts[0]["head"].strip()
    if head.endswith(":"):
        return [(head[:-1], part["unit"] or "value", float(part["value"])) for part in parts]
    record, _, first = head.partition(" ") if len(parts) > 1 else ("", "", head)
    first = first.strip()
    labels = [first or record, *(part["head"].strip() for part in parts[1:])]
    return [(record or "line", label, float(part["value"])) for label, part in zip(labels, parts)]


def trial_table(lines: list[str], i: int) -> tuple[list[tuple[str, str, float]], int]:
    """The rows of the CLI's closing table that starts at line i (its header), and the line after it."""
    header = lines[i].split()
    rows, j = [], i + 2  # past the header and its rule
    while j < len(lines) and lines[j].strip():
        cells = lines[j].split()
        if len(cells) == len(header):
            for name, text in zip(header[1:], cells[1:]):
                if re.fullmatch(NUMBER, text):
                    rows.append((cells[0], name, float(text)))
        j += 1
    return rows, j


# what an experiment's runs printed: terminal output and logs, and the run scripts' tables
SOURCES = ("*.log", "*.jsonl", "table.txt", "timeline.txt", "gaps.txt", "trials.txt", "diag.txt")
COLUMNS = re.compile(r"\s{2,}")
# h100-bytecode-cache/diag.py: "<site-packages>/torch: 0 of 2141 modules with current bytecode; writable True"
BYTECODE = re.compile(r"^\S*/(?P<package>[\w.-]+): (?P<current>\d+) of (?P<total>\d+) modules with current bytecode")
BENCH_FLOOR = re.compile(
    rf"^cold-process floor \(batch \d+\): (?P<floor>{NUMBER}) s to the first step's end; "
    r"phases end at s: (?P<phases>.*)$"
)
BENCH_RATE = re.compile(
    rf"^\s*(?P<label>[A-Za-z][^:]*?): (?P<rate>{NUMBER}) img/s(?: = (?P<ratio>{NUMBER}) x [^,]*)?"
    rf"(?:, data_wait_fraction (?P<wait>{NUMBER}))?"
)


def words(line: str) -> list[str]:
    """A row split on whitespace, a trailing JSON object one cell."""
    head, brace, tail = line.strip().partition("{")
    return head.split() + ([brace + tail] if brace else [])


def spaced_table(lines: list[str], i: int, run: str | None = None) -> tuple[list[tuple[str, str, float]], int]:
    """The rows under a header of column names at line i, and the line after. Columns are two or more spaces
    apart, or, where the first row has as many words as the header (pandas' right-aligned tables of one-word
    names), one or more. A row with one cell more than the header starts with its index (gaps.py's trials:
    record ``new1 trial 0``)."""
    rows, j = [], i + 1
    while j < len(lines) and set(lines[j].strip()) <= set("- "):  # a rule under the header
        j += 1
    by_words = j < len(lines) and len(words(lines[j])) in (len(lines[i].split()), len(lines[i].split()) + 1)
    header = lines[i].split() if by_words else COLUMNS.split(lines[i].strip())
    while j < len(lines):
        cells = words(lines[j]) if by_words else COLUMNS.split(lines[j].strip())
        if len(cells) == len(header) + 1 and cells[0].isdigit():
            record, names, cells = f"{run or 'row'} trial {cells[0]}", header, cells[1:]
        elif len(cells) == len(header) and any(re.fullmatch(NUMBER, c) for c in cells):
            record, names = f"{header[0]} {cells[0]}", header[1:]
            if not re.fullmatch(NUMBER, cells[1]):
                record += f" {header[1]} {cells[1]}"
            cells = cells[1:]
        else:
            break
        for name, cell in zip(names, cells):
            if re.fullmatch(NUMBER, cell):
                rows.append((record, name, float(cell)))
            elif cell.startswith("{"):  # a JSON column, setup_breakdown
                rows += [(record, f"{name}.{q}", v) for q, v in flatten(json.loads(cell))]
            elif m := re.fullmatch(rf"(?P<low>{NUMBER})-(?P<high>{NUMBER})", cell):  # a range, "649-892"
                rows += [(record, f"{name} low", float(m["low"])), (record, f"{name} high", float(m["high"]))]
        j += 1
    return rows, j


def is_header(line: str) -> bool:
    names = COLUMNS.split(line.strip())
    return len(names) >= 3 and not any(re.search(r"\d", n) for n in names) and not set(line) & set("|│[{=:")


def rows_of(text: str) -> list[tuple[str, str, float]]:
    rows: list[tuple[str, str, float]] = []
    lines = text.splitlines()
    arm, run, i = None, None, 0
    while i < len(lines):
        line = lines[i].rstrip()
        i += 1
        if not line.strip() or "pid=" in line:
            continue
        if line.startswith("trial_id ") and "status" in line:
            found, i = trial_table(lines, i - 1)
            rows += found
            continue
        if is_header(line) and i < len(lines):
            found, after = spaced_table(lines, i - 1, run)
            if found:
                rows += found
                i = after
                continue
        if m := BYTECODE.match(line):
            rows += [(m["package"], "modules", float(m["total"])), (m["package"], "current", float(m["current"]))]
            continue
        if m := TIMELINE_RUN.match(line):
            run = m["tag"]
            if m["launch"] is not None:  # timeline.py's header when it counts from the first trial's start
                rows.append((run, "CLI launch", float(m["launch"])))
            if m["wall"] is not None:  # gaps.py's header, its table of each trial's seconds below
                rows.append((run, "wall", float(m["wall"])))
            continue
        if run and (m := TIMELINE_EVENT.match(line)):
            rows.append((run, m["event"].strip(), float(m["value"])))
            continue
        if found := economy_rows(line, i):
            rows += found
            continue
        if (found := json_rows(line, i)) is not None:
            rows += found
            continue
        if m := BENCH_FLOOR.match(line):
            phases = re.findall(rf"([a-z][\w. ]*?) ({NUMBER})(?:,|$)", m["phases"])
            rows += [("cold-process floor", name.strip(), float(value)) for name, value in phases]
        elif m := BENCH_RATE.match(line):
            quantities = {"rate": "img/s", "ratio": "ratio", "wait": "data_wait_fraction"}
            rows += [(m["label"], q, float(m[k])) for k, q in quantities.items() if m[k] is not None]
        elif m := AB_RUN.match(line):
            rows.append((f"{m['arm']} {m['run']}", "exited after launch", float(m["value"])))
        elif m := AB_ARM.match(line):
            arm = m["arm"]
            names = (m["names"] or OLD_AB_NAMES).split(", ")
            tuples = re.findall(r"\(([^)]*)\)", m["tuples"] or m["keyed"] or "")
            for run, values in enumerate(tuples, 1):
                rows += [(f"{arm} {run}", name, value) for name, value in zip(names, numbers(values))]
        elif (m := AB_METRIC.match(line)) and arm:
            for stat in ("median", "low", "high"):
                rows.append((arm, f"{m['metric']} {stat}", float(m[stat])))
            for run, value in enumerate(numbers(m["runs"]), 1):
                rows.append((f"{arm} {run}", m["metric"], float(value)))
        elif m := AB_PAIRED.match(line):
            for run, value in enumerate(numbers(m["runs"]), 1):
                rows.append((f"base - new {run}", m["metric"], float(value)))
        elif m := SWEEP_END.match(line):
            for name in ("trials", "wall", "duty", "launch", "setup"):
                if m[name] is not None:
                    quantity = {"wall": "wall_s", "duty": "duty_cycle", "launch": "duty_cycle_from_launch"}
                    quantity |= {"setup": "median_setup_s"}
                    rows.append(("sweep", quantity.get(name, name), float(m[name])))
        elif m := STAGE.match(line):
            for stat in ("median", "low", "high"):
                rows.append((m["name"].strip(), stat, float(m[stat])))
        elif m := NAMED_SECONDS.match(line):
            rows.append((f"line {i}", m["name"].strip(), float(m["value"])))
        elif pairs := labelled_values(line):
            rows += [(f"{record} (line {i})", quantity, value) for record, quantity, value in pairs]
    return rows


def summarize(experiment: Path, out: str = "summary.csv") -> Path:
    logs = sorted(p for pattern in SOURCES for p in experiment.rglob(pattern))
    path = experiment / out
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["source", "record", "quantity", "value"])
        for log in logs:
            source = log.relative_to(experiment).with_suffix("").as_posix()  # call1/base1, call1/table
            writer.writerows((source, *row) for row in rows_of(log.read_text(errors="replace")))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiments", nargs="+", type=Path)
    parser.add_argument("--out", default="summary.csv", help="its name in the experiment (default: summary.csv)")
    args = parser.parse_args(argv)
    for experiment in args.experiments:
        print(summarize(experiment, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
