"""The hand-written variants of bench runs cut short, from the progress lines in their logs.

    python docs/results/h100-bench-compile/summarize_progress.py --device "NVIDIA H100 80GB HBM3" \
        --date 2026-12-06 A=LOG [A=LOG | B=LOG ...] > docs/results/h100-bench-compile/summary-autotune.csv

A bench writes ``bench.json`` only at its end; a run stopped at the device call's limit (here while the stack
compiled) leaves the line it printed as each hand-written variant ended: its median img/s, its range where
the bench printed one, its warm-up. ``host`` labels the machine a log came from (calls on one machine share
a label), so that rows compare only within a host. A max-autotune variant's warm-up includes Inductor's
benchmarking of its kernel choices, which Inductor logs op by op ("AUTOTUNE op(shapes)", then "... benchmarking
takes S seconds ... for N choices"); ``tuned_ops``, ``tuning_s`` and ``choices_min``/``choices_max`` sum those
of the bench's own process (not the stack's workers, whose lines Ray prefixes) since the previous variant.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys

LINE = re.compile(
    r"^bench: hand-written (?P<what>\S+) at micro batch (?P<batch>\d+): (?P<img_s>[\d.]+) img/s "
    # the bench's line now, with the range; the form before it printed the median alone
    r"(?:\((?P<img_s_min>[\d.]+)-(?P<img_s_max>[\d.]+)\), warm-up (?P<warmup>[\d.]+) s"
    r"|\(warm-up (?P<warmup_old>[\d.]+) s\))$"
)


TUNING = re.compile(r"^\w+ AUTOTUNE benchmarking takes (?P<s>[\d.]+) seconds .* for (?P<n>\d+) choices$")


def rows(host: str, text: str) -> list[dict]:
    out = []
    tuned: list[tuple[float, int]] = []  # (seconds, choices) of each op tuned since the last variant ended
    for line in text.splitlines():
        t = TUNING.match(line)
        if t:
            tuned.append((float(t["s"]), int(t["n"])))
        m = LINE.match(line)
        if m:
            out.append(
                {
                    "host": host,
                    "batch": int(m["batch"]),
                    "what": m["what"],
                    "img_s": m["img_s"],
                    "img_s_min": m["img_s_min"] or "",
                    "img_s_max": m["img_s_max"] or "",
                    "warmup_s": m["warmup"] or m["warmup_old"],
                    "tuned_ops": len(tuned),
                    "tuning_s": f"{sum(s for s, _ in tuned):.1f}",
                    "choices_min": min((n for _, n in tuned), default=""),
                    "choices_max": max((n for _, n in tuned), default=""),
                }
            )
            tuned = []
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", required=True)
    p.add_argument("--date", required=True)
    p.add_argument("logs", nargs="+", metavar="HOST=LOG")
    args = p.parse_args(argv)
    table = []
    for item in args.logs:
        host, _, path = item.partition("=")
        with open(path) as f:
            table += [{**r, "device": args.device, "date": args.date} for r in rows(host, f.read())]
    writer = csv.DictWriter(sys.stdout, fieldnames=list(table[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
