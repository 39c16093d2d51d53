"""Regenerates the README's two CPU example sweeps, docs/results/cpu-batch-grid and cpu-strong-scaling, with
today's code and schema, then re-renders the docs' figures from them.

    PYTHONPATH=. python docs/results/cpu_examples.py                      # both, about 5-8 minutes on 2 cores
    PYTHONPATH=. python docs/results/cpu_examples.py cpu-strong-scaling   # one
    PYTHONPATH=. python docs/results/cpu_examples.py --smoke OUT cpu-batch-grid   # tiny, kept in OUT (CI)

Each example runs the command its README shows, into a temporary results directory, and keeps in
docs/results/<name>/: ``summary.csv`` (one row per trial, every trials column: ``summarize_sweep.py``),
``sweep.json`` (the command line, versions, the cluster, the economy) and ``report/`` (report.md,
report.html, the PNG plots, summary.json). Its tables (trials/, epochs/, ranks/), logs, TensorBoard runs and
Ray's state are not kept. Then ``python docs/render.py`` rewrites the figures of the READMEs from the new
summaries.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))  # summarize_sweep, beside this script

from summarize_sweep import summarize  # noqa: E402

# name -> the options of `python -m raysweep.tune` its README shows (its results dir and name are added here)
EXAMPLES = {
    "cpu-batch-grid": ["--space", "batch_grid"],
    "cpu-strong-scaling": [
        "--space", "strong_scaling", "--set", "num_workers=[1,2]", "--set", "train_samples=1024", "--epochs", "2",
    ],
}  # fmt: skip
REPORT_FILES = ("report.md", "report.html", "summary.json", "*.png")
# --smoke: the same commands at the smallest size that still trains, evaluates and reports (one trial, one rank)
SMOKE = ["--set", "micro_batch_per_worker=[16]", "--set", "num_workers=[1]", "--set", "train_samples=64"]
SMOKE += ["--epochs", "1", "--repeats", "1"]


def regenerate(name: str, scratch: Path, into: Path = HERE, smoke: bool = False) -> None:
    options = [*EXAMPLES[name], *(SMOKE if smoke else [])]
    command = [sys.executable, "-m", "raysweep.tune", *options, "--results-dir", str(scratch), "--name", name]
    print("running:", " ".join(command[1:]), flush=True)
    subprocess.run(command, cwd=ROOT, check=True)
    sweep, kept = scratch / name, into / name
    for old in ("trials", "epochs", "ranks", "tensorboard", "report"):
        shutil.rmtree(kept / old, ignore_errors=True)
    (kept / "report").mkdir(parents=True)
    for pattern in REPORT_FILES:
        for file in (sweep / "report").glob(pattern):
            shutil.copy(file, kept / "report" / file.name)
    shutil.copy(sweep / "sweep.json", kept / "sweep.json")
    shutil.copy(summarize(sweep), kept / "summary.csv")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"any of {', '.join(EXAMPLES)} (default: all)")
    parser.add_argument("--smoke", type=Path, metavar="OUT", help="run them tiny and keep them in OUT, not here")
    args = parser.parse_args(argv)
    names = args.names or list(EXAMPLES)
    if unknown := sorted(set(names) - set(EXAMPLES)):
        parser.error(f"no example {', '.join(unknown)}; the examples: {', '.join(EXAMPLES)}")
    with tempfile.TemporaryDirectory(prefix="raysweep-examples-") as scratch:
        for name in names:
            regenerate(name, Path(scratch), into=args.smoke or HERE, smoke=args.smoke is not None)
    if args.smoke is not None:
        return 0
    return subprocess.run([sys.executable, str(ROOT / "docs" / "render.py")], cwd=ROOT).returncode


if __name__ == "__main__":
    raise SystemExit(main())
