"""The layers run one way: the vocabulary (``raysweep.core``) at the ground floor, the rank (``trainers``) and
the analysis on it, Ray's plumbing in ``raysweep.runtime``, the orchestration on top, the benchmarks beside.
Inside each wing, rooms (subpackages) by responsibility, each taking only from the rooms below it.

Read from the source with ``ast`` (every import, function-local and type-checking ones included), so an
import that only runs on some code path still counts. ``NEVER`` is the design's list of imports that must
not be (the design picture of the layers: parts, arrows, nevers).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("raysweep", "trainers", "analysis")

# Longest prefix first: the part a module belongs to.
PARTS = (
    ("raysweep.core", "Core"),
    ("raysweep.runtime", "Runtime"),
    ("raysweep.bench", "Bench"),
    ("raysweep", "Orchestration"),
    ("trainers", "Worker"),
    ("analysis", "Analysis"),
)
NEVER = {
    ("Core", "Worker"),  # values know no registries
    ("Core", "Analysis"),  # values know no reports
    ("Core", "Runtime"),  # the ground floor knows no Ray
    ("Core", "Orchestration"),
    ("Worker", "Orchestration"),  # a rank knows no CLI
    ("Worker", "Runtime"),  # a rank is handed its trial
    ("Analysis", "Orchestration"),  # analysis runs on tables alone
    ("Analysis", "Runtime"),
    ("Worker", "Analysis"),  # separate wings
    ("Analysis", "Worker"),
    ("Runtime", "Analysis"),  # the runtime records, it does not analyse
    ("Runtime", "Orchestration"),  # the runtime is handed plans
    ("Orchestration", "Bench"),  # the library does not depend on its benchmarks
}


# The rooms of each wing and the rooms of the same wing each may import (the vocabulary, raysweep.core, is open
# to all; imports across wings are the parts' rules above). A room never takes from its wing's top floor
# (the loop, the entry points) nor from a room beside it.
ROOMS = {
    "trainers.data": set(),  # datasets, files, node copies, device batches
    "trainers.measure": set(),  # clocks, FLOPs, energy, memory, stragglers, the meter
    "trainers.model": set(),  # models by name, checkpointing, sequence parallelism
    "trainers.engines": set(),  # DeepSpeed, DDP, FSDP2, Accelerate and their config
    "analysis.rows": set(),  # the tables read; which rows compare; the evidence rule
    "analysis.prediction": {"analysis.rows"},
    "analysis.metrics": {"analysis.rows", "analysis.prediction"},
    "analysis.report": {"analysis.rows", "analysis.prediction", "analysis.metrics"},
    "raysweep.runtime.caches": set(),
    "raysweep.results": {"raysweep.runtime"},
    "raysweep.planning": {"raysweep.results", "raysweep.runtime"},
    "raysweep.watch": set(),
}
# More modules than this in one folder and the folder no longer shows what the wing holds: make a room.
MOST_MODULES_IN_A_FOLDER = 15


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


def part(module: str) -> str:
    return next(name for prefix, name in PARTS if module == prefix or module.startswith(prefix + "."))


def import_graph() -> dict[str, set[str]]:
    return {
        module_name(path): imports_of(path) for package in PACKAGES for path in sorted((REPO / package).rglob("*.py"))
    }


def test_no_import_the_design_forbids():
    wrong = [
        f"{module} ({part(module)}) imports {target} ({part(target)})"
        for module, targets in import_graph().items()
        for target in sorted(targets)
        if (part(module), part(target)) in NEVER
    ]
    assert wrong == []


def test_the_rank_and_the_analysis_take_only_the_vocabulary_from_raysweep():
    wrong = [
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        if part(module) in ("Worker", "Analysis")
        for target in targets
        if target.startswith("raysweep") and part(target) != "Core"
    ]
    assert wrong == []


def test_the_vocabulary_knows_no_ray():
    core = [p for p in (REPO / "raysweep" / "core").rglob("*.py")]
    assert core
    wrong = []
    for path in core:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            wrong += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "ray"]
    assert wrong == []


def test_no_import_cycle_between_modules():
    # ``from raysweep import api`` in raysweep/__init__.py names the package itself: not a cycle.
    graph = {m: targets - {m} for m, targets in import_graph().items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*path[path.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_no_cycle_between_parts():
    edges = {(part(m), part(t)) for m, targets in import_graph().items() for t in targets if part(m) != part(t)}
    names = {name for _, name in PARTS}
    reachable = {a: {b for x, b in edges if x == a} for a in names}
    changed = True
    while changed:
        changed = False
        for a in reachable:
            more = set().union(*(reachable[b] for b in reachable[a])) - reachable[a]
            if more:
                reachable[a] |= more
                changed = True
    assert sorted(a for a in reachable if a in reachable[a]) == []


def room(module: str) -> str:
    """The folder a module stands in, as a dotted name (a package's own ``__init__`` stands in its folder)."""
    path = module_path(module)
    assert path is not None, module
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def test_each_room_takes_only_from_the_rooms_below_it():
    wrong = []
    for module, targets in import_graph().items():
        home = room(module)
        if home not in ROOMS:
            continue
        wing = home.split(".")[0]
        for target in sorted(targets):
            there = room(target)
            if there == home or part(target) == "Core" or target.split(".")[0] != wing:
                continue
            if there not in ROOMS[home]:
                wrong.append(f"{module} ({home}) imports {target} ({there})")
    assert wrong == []


def test_every_room_is_pinned():
    rooms = {room(module_name(path)) for package in PACKAGES for path in (REPO / package).rglob("__init__.py")}
    wings_and_floors = set(PACKAGES) | {prefix for prefix, _ in PARTS}
    assert sorted(rooms - wings_and_floors - set(ROOMS)) == []


def test_no_cycle_between_rooms():
    edges = {(room(m), room(t)) for m, targets in import_graph().items() for t in targets if room(m) != room(t)}
    names = {a for a, _ in edges} | {b for _, b in edges}
    reachable = {a: {b for x, b in edges if x == a} for a in names}
    changed = True
    while changed:
        changed = False
        for a in reachable:
            more = set().union(*(reachable[b] for b in reachable[a])) - reachable[a]
            if more:
                reachable[a] |= more
                changed = True
    assert sorted(a for a in reachable if a in reachable[a]) == []


def crowded_folders(root: Path, packages: tuple[str, ...]) -> dict[str, int]:
    """Each package folder under ``root`` holding more than ``MOST_MODULES_IN_A_FOLDER`` modules, with its count."""
    folders = [root / package for package in packages]
    folders += [init.parent for package in packages for init in (root / package).rglob("*/__init__.py")]
    counts = {folder: sum(1 for f in folder.glob("*.py") if f.name != "__init__.py") for folder in folders}
    return {str(f.relative_to(root)): n for f, n in counts.items() if n > MOST_MODULES_IN_A_FOLDER}


def test_no_folder_holds_more_than_fifteen_modules():
    assert crowded_folders(REPO, PACKAGES) == {}


def test_the_folder_count_sees_a_crowded_room_and_not_its_init(tmp_path):
    room = tmp_path / "pkg" / "room"
    room.mkdir(parents=True)
    for folder, modules in ((tmp_path / "pkg", 3), (room, MOST_MODULES_IN_A_FOLDER + 1)):
        for name in ["__init__", *(f"m{i}" for i in range(modules))]:
            (folder / f"{name}.py").write_text("")
    assert crowded_folders(tmp_path, ("pkg",)) == {"pkg/room": MOST_MODULES_IN_A_FOLDER + 1}
    (room / "m0.py").unlink()
    assert crowded_folders(tmp_path, ("pkg",)) == {}


def test_the_graph_reader_sees_function_local_imports(tmp_path):
    source = tmp_path / "probe.py"
    source.write_text("def f():\n    from trainers.model.models import check_model_name\n")
    assert "trainers.model.models" in imports_of(source)


# Strings that equal a status but name something else: a fault kind, a gauge's flag.
NOT_STATUSES = {("trainers/faults.py", "oom"), ("raysweep/watch/sweep_metrics.py", "failed")}


def test_status_values_are_written_only_in_the_vocabulary():
    from raysweep.core.status import TrialStatus

    statuses = set(TrialStatus.values())
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            where = str(path.relative_to(REPO))
            if where.startswith("raysweep/core/"):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                literal = isinstance(node, ast.Constant) and node.value in statuses
                if literal and (where, node.value) not in NOT_STATUSES:
                    found.append(f"{where}:{node.lineno} {node.value!r}")
    assert found == []
