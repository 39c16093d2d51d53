"""``python -m analysis SWEEP_DIR [SWEEP_DIR ...] [--target ACC] [--out DIR]``: write the sweep's report, or with
two or more sweeps one comparison report."""

from __future__ import annotations

import argparse

from analysis.api import analyze
from analysis.comparison import compare
from raysweep.core.command import ArgumentParser, exit_process, run_command


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = ArgumentParser(prog="python -m analysis", description=__doc__)
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
    return run_command(report_command, argv)


def report_command(argv: list[str] | None) -> int:
    args = parse_args(argv)
    if len(args.sweep_dirs) == 1:
        path = analyze(args.sweep_dirs[0], target=args.target, out_dir=args.out)
    else:
        path = compare(args.sweep_dirs, out_dir=args.out, target=args.target)
    print(path)
    return 0


if __name__ == "__main__":
    exit_process(main())
