"""What a rank's imports cost in a fresh process on the GPU host, from ``python -X importtime``'s output.

    python -X importtime -c "import torch, torch.distributed; torch.cuda.init(); import timm, deepspeed, \\
        ray.train.torch" 2> RUN/imp1.txt          # twice: imp1.txt, imp2.txt
    python summarize_imports.py RUN/imp1.txt RUN/imp2.txt > summary-imports.csv

One row per process and module: each top-level import (in the order the command names them, each
counting only what the ones before it had not loaded) and ``torch._dynamo`` wherever it was first
loaded, with its cumulative seconds and the top-level import it came under.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

WATCHED = ("torch._dynamo",)  # nested imports worth their own row


def rows(path: Path, process: int) -> list[dict]:
    """importtime prints a module as its import ends, so a nested row comes before its top-level import's."""
    out, nested = [], []
    lines = [line for line in path.read_text().splitlines() if line.startswith("import time:")][1:]  # no header
    for line in lines:
        _, cumulative, name = line.split("|")
        module, depth = name.strip(), len(name) - len(name.lstrip()) - 1
        row = {"process": process, "module": module, "under": "", "cumulative_s": round(int(cumulative) / 1e6, 3)}
        if depth and module in WATCHED:
            nested.append(row)
        elif not depth:
            out += [*({**r, "under": module} for r in nested), row]
            nested = []
    return out


def main(argv: list[str] | None = None) -> int:
    paths = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    table = [row for i, path in enumerate(paths, 1) for row in rows(path, i) if row["cumulative_s"] >= 0.05]
    writer = csv.DictWriter(sys.stdout, fieldnames=["process", "module", "under", "cumulative_s"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
