"""Every figure in README.md and docs/ that comes from a run, rendered from its experiment's committed summary.

    PYTHONPATH=. python docs/render.py            # rewrite the figure blocks in place
    PYTHONPATH=. python docs/render.py --check    # exit 1, naming the files, where a block differs

A figure is a block of the markdown between two comments, ``<!-- figure:NAME -->`` and ``<!-- /figure -->``,
whose text this script owns: it is replaced by what the function registered as NAME returns. The functions
live in ``docs/figures/``, one module per experiment or topic, each reading its experiment's summary table under
``docs/results/<experiment>/`` (``docs/figures/__init__.py`` says which tables). ``tests/test_docs_render.py``
fails when a committed block differs from its rendering, so a figure cannot be edited by hand nor drift from its
summary.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
# the figure modules' package, loaded from its folder under a name of its own (docs/ is not a package)
PACKAGE = "docs_figures"


def load_figures() -> ModuleType:
    if PACKAGE in sys.modules:
        return sys.modules[PACKAGE]
    init = HERE / "figures" / "__init__.py"
    spec = importlib.util.spec_from_file_location(PACKAGE, init, submodule_search_locations=[str(init.parent)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package
    spec.loader.exec_module(package)
    package.load_all()
    return package


figures = load_figures()
FIGURES = figures.FIGURES
ROOT = figures.ROOT
RESULTS = figures.RESULTS
summary = figures.summary
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted(RESULTS.glob("*.md")),
    *sorted(RESULTS.glob("*/README.md")),
]
# a block on lines of its own, or inline within a sentence: <!-- figure:NAME -->0.96-0.99x<!-- /figure -->
BLOCK = re.compile(r"<!-- figure:(?P<name>[a-z0-9-]+) -->(?P<newline>\n?)(?P<body>.*?)\n?<!-- /figure -->", re.DOTALL)


def render_text(text: str) -> str:
    """``text`` with every figure block's body replaced by its rendering; an unknown name is an error."""

    def replace(match: re.Match) -> str:
        name = match["name"]
        if name not in FIGURES:
            raise KeyError(f"no figure named {name!r} (docs/figures has: {', '.join(sorted(FIGURES))})")
        newline = match["newline"]
        return f"<!-- figure:{name} -->{newline}{FIGURES[name]()}{newline}<!-- /figure -->"

    return BLOCK.sub(replace, text)


def used_figures(text: str) -> set[str]:
    return {m["name"] for m in BLOCK.finditer(text)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python docs/render.py", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 where a block differs")
    check = parser.parse_args(argv).check
    stale = []
    for doc in DOCS:
        text = doc.read_text()
        rendered = render_text(text)
        if rendered != text:
            stale.append(doc.relative_to(ROOT))
            if not check:
                doc.write_text(rendered)
    for doc in stale:
        print(f"{'differs' if check else 'rendered'}: {doc}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
