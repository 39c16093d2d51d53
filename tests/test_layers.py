"""The layers run one way: the vocabulary under trainers/ and analysis/, orchestration on top of all.

Read from the source with ``ast`` (every import, function-local ones included), so an import that
only runs on some code path still counts.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("raysweep", "trainers", "analysis")
# The shared vocabulary: plain values, errors, the result schema and store, and what they import.
VOCABULARY = {
    "raysweep.params",
    "raysweep.errors",
    "raysweep.schema",
    "raysweep.store",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every project module ``path`` imports, at any depth of the file (``from a import b`` counts a.b if it is one)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] in PACKAGES and (module_path(name) is not None)}


def module_path(name: str) -> Path | None:
    base = REPO.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def layer(module: str) -> str:
    top = module.split(".")[0]
    if top == "raysweep":
        return "vocabulary" if module in VOCABULARY else "orchestration"
    return top


def import_graph() -> dict[str, set[str]]:
    return {
        module_name(path): imports_of(path) for package in PACKAGES for path in sorted((REPO / package).rglob("*.py"))
    }


ALLOWED = {
    "vocabulary": {"vocabulary"},
    "trainers": {"vocabulary", "trainers"},
    "analysis": {"vocabulary", "analysis"},
    "orchestration": {"vocabulary", "trainers", "analysis", "orchestration"},
}


def test_every_import_goes_down_the_layers():
    wrong = [
        f"{module} ({layer(module)}) imports {target} ({layer(target)})"
        for module, targets in import_graph().items()
        for target in sorted(targets)
        if layer(target) not in ALLOWED[layer(module)]
    ]
    assert wrong == []


def test_the_vocabulary_is_all_there():
    assert [name for name in VOCABULARY if module_path(name) is None] == []


def test_no_cycle_between_layers():
    edges = {(layer(m), layer(t)) for m, targets in import_graph().items() for t in targets if layer(m) != layer(t)}
    reachable = {a: {b for x, b in edges if x == a} for a in ALLOWED}
    changed = True
    while changed:
        changed = False
        for a in reachable:
            more = set().union(*(reachable[b] for b in reachable[a])) - reachable[a]
            if more:
                reachable[a] |= more
                changed = True
    assert [a for a in reachable if a in reachable[a]] == []


def test_the_graph_reader_sees_function_local_imports(tmp_path):
    source = tmp_path / "probe.py"
    source.write_text("def f():\n    from trainers.models import check_model_name\n")
    assert "trainers.models" in imports_of(source)
