"""The bench's ``bench.json`` as this experiment's summary table: one row per micro batch and what ran.

    python docs/results/h100-bench-compile/summarize.py OUT/bench.json [OUT2/bench.json ...] \
        > docs/results/h100-bench-compile/summary.csv

``what`` is a hand-written variant (eager, default, reduce-overhead, ...) or ``stack``; img/s is the median of
the timed windows with their range (a hand-written variant's windows; for the stack every epoch of every trial
of that micro batch, with each trial's median in ``first_img_s`` and ``later_img_s``, in the order they ran);
a stack row's ``setup_s`` and ``warmup_s`` are the batch's last trial's (a later trial: the compile's share),
its ``compile_mode`` the torch.compile mode the bench compiled the stack in (the summaries written before that
column have none: their stacks compiled in reduce-overhead, the README says).  Several runs' files (calls on
one machine, one micro batch each) make one table, in the order given.
"""

from __future__ import annotations

import csv
import json
import sys


def rows(bench: dict) -> list[dict]:
    on = {"device": bench["device"], "date": bench["date"]}
    table = [
        {"batch": p["batch"], "what": p["variant"], "img_s": p["plain_img_s"], "img_s_min": p["plain_img_s_min"],
         "img_s_max": p["plain_img_s_max"], "setup_s": None, "warmup_s": p["plain_warmup_s"],
         "first_img_s": None, "later_img_s": None, **on, "compile_mode": None}
        for p in bench["plain"]
    ]  # fmt: skip
    table += [
        {"batch": r["batch"], "what": "stack", "img_s": r["stack_img_s"], "img_s_min": r["stack_img_s_min"],
         "img_s_max": r["stack_img_s_max"], "setup_s": r["setup_s"], "warmup_s": r["stack_warmup_s"],
         "first_img_s": r["first_img_s"], "later_img_s": ";".join(f"{v:.2f}" for v in r["later_img_s"]), **on,
         "compile_mode": r["compile_mode"]}
        for r in bench["rows"]
    ]  # fmt: skip
    return table


def main(argv: list[str] | None = None) -> int:
    table = []
    for path in sys.argv[1:] if argv is None else argv:
        with open(path) as f:
            table += rows(json.load(f))
    writer = csv.DictWriter(sys.stdout, fieldnames=list(table[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: f"{v:.2f}" if isinstance(v, float) else v for k, v in row.items()} for row in table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
