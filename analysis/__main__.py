"""``python -m analysis SWEEP_DIR [SWEEP_DIR ...] [--target ACC] [--out DIR]``: write the sweep's report, or with
two or more sweeps one comparison report."""

from __future__ import annotations

import argparse
import sys

from analysis.api import analyze
from analysis.compare import compare
from analysis.errors import AnalysisError


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m analysis", description=__doc__)
    parser.add_argument(
        "sweep_dirs",
        nargs="+",
        metavar="SWEEP_DIR",
        help="a sweep directory: <results-dir>/<sweep>; two or more write one comparison",
    )
    parser.add_argument(
        "--target",
        type=float,
        default=None,
        help="target validation accuracy for time to accuracy, a fraction in (0, 1] "
        "(default: 90%% of the best in the sweep)",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="output directory (default: <sweep_dir>/report; for a "
        "comparison <results-dir of the first>/compare-<names>)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if len(args.sweep_dirs) == 1:
            report = analyze(args.sweep_dirs[0], target=args.target, out_dir=args.out)
        else:
            report = compare(args.sweep_dirs, out_dir=args.out, target=args.target)
    except AnalysisError as exc:
        print(f"analysis: error: {exc}", file=sys.stderr)
        return 2
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
