"""Search spaces: YAML files of axes and fixed values, expanded into a list of trials.

A space file::

    description: one line on what the space answers
    axes:                                   # one grid, or a list of grids (their union)
      micro_batch_per_worker: [16, 32, 64]  # grid values
      lr: {loguniform: [1.0e-4, 1.0e-2]}    # or a distribution, sampled num_samples times
    fixed:
      num_workers: 1
    num_samples: 1                          # samples of each grid point's distributions
    repeats: 3                              # optional: runs of each trial (default 1), seeds seed..seed+2
    requires: gpu                           # optional: skipped, with a message, without GPUs
    drop_unfit: true                        # optional: drop trials bigger than the cluster
    metric: val_accuracy                    # optional, with mode, scheduler and search:
    mode: max                               #   how the sweep searches (raysweep.planning.search_config)
    scheduler: asha
    search: optuna

Files are parsed with a safe YAML loader (``load_yaml``: YAML 1.2 booleans, so ``off`` stays a
string) and never evaluated.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from raysweep.core.errors import UsageError
from raysweep.core.names import did_you_mean, unknown_name
from raysweep.core.params import PARAMETERS_LISTING, PATH_PARAMS, TrialParams
from raysweep.core.paths import user_path
from raysweep.planning.search_config import SEARCH_KEYS, AxisKinds, SearchChoices, SearchConfig, search_config_from

SPACES_DIR = Path(str(resources.files("search_spaces")))
DISTRIBUTIONS = {"uniform": 2, "loguniform": 2, "randint": 2, "choice": 1}
SPACE_KEYS = {"description", "axes", "fixed", "num_samples", "repeats", "requires", "drop_unfit", *SEARCH_KEYS}


@dataclass
class SearchSpace:
    name: str
    description: str = ""
    grids: list[dict[str, Any]] = field(default_factory=lambda: [{}])
    fixed: dict[str, Any] = field(default_factory=dict)
    num_samples: int = 1
    requires: str = ""
    drop_unfit: bool = False
    search: SearchConfig = field(default_factory=SearchConfig)
    repeats: int = 1

    def with_overrides(self, overrides: dict[str, Any]) -> SearchSpace:
        """``--set`` and the named flags: a value replaces the fixed value and any axis of that name.

        A list whose every value is a point of the space's grids selects those points instead: each grid keeps
        its own values among them (and its own other axes, as ``tuned_batch``'s learning-rate range per batch
        size), a grid with none of them is dropped.
        """
        check_keys(overrides, f"--set (space {self.name})")
        axes = {k: v for k, v in overrides.items() if isinstance(v, (list, dict))}
        for key, value in axes.items():
            check_axis(key, value, "--set")
        scalars = {k: v for k, v in overrides.items() if k not in axes}
        grids = [{k: v for k, v in g.items() if k not in scalars} for g in self.grids]
        for key, values in axes.items():
            if isinstance(values, list) and self.holds(key, values):
                grids = [
                    selected(g, key, values)
                    for g in grids
                    if not isinstance(g.get(key), list) or selects(g, key, values)
                ]
            else:
                grids = [{**g, key: values} for g in grids]
        fixed = {**self.fixed, **scalars}
        return dataclasses.replace(self, grids=dedupe(grids), fixed=fixed)

    def holds(self, key: str, values: list) -> bool:
        """Every value is in a list axis ``key`` of some grid (more than one grid has the axis: a selection)."""
        lists = [g[key] for g in self.grids if isinstance(g.get(key), list)]
        return len(lists) > 1 and all(any(v in axis for axis in lists) for v in values)

    def with_search(self, choices: SearchChoices) -> SearchSpace:
        """The CLI's search flags (``run_sweep``'s keywords) in place of the space's own values."""
        if choices.num_samples is not None and choices.num_samples < 1:
            raise UsageError(f"--num-samples must be at least 1, got {choices.num_samples}")
        return replace(
            self,
            search=choices.apply(self.search, "search options"),
            num_samples=self.num_samples if choices.num_samples is None else choices.num_samples,
        )

    def with_repeats(self, repeats: int | None) -> SearchSpace:
        """``--repeats N`` (``repeats=`` of ``run_sweep``): N runs of every trial; None keeps the space's own."""
        if repeats is None:
            return self
        return dataclasses.replace(self, repeats=check_repeats(repeats, "--repeats"))

    def with_paths_resolved(self) -> SearchSpace:
        """Every path parameter (``PATH_PARAMS``) made absolute against the working directory, where the user
        typed it: the ranks run in Ray's own directory, so a relative one would name another folder there."""

        def resolved(value: Any) -> Any:
            if isinstance(value, list):
                return [resolved(v) for v in value]
            return str(user_path(value)) if isinstance(value, str) and value else value

        fixed = {k: resolved(v) if k in PATH_PARAMS else v for k, v in self.fixed.items()}
        grids = [{k: resolved(v) if k in PATH_PARAMS else v for k, v in g.items()} for g in self.grids]
        return dataclasses.replace(self, grids=grids, fixed=fixed)

    def expand(self, seed: int = 0) -> list[TrialParams]:
        """The trials known before the sweep starts, distributions sampled with a seeded generator, x ``repeats``.

        ``grid``: every grid point x ``num_samples``; ``random``: ``num_samples`` draws of every axis (a
        list is a uniform choice); ``optuna``: one draw per grid point, the template of its study's trials
        (its shape is what planning checks; Optuna picks the distribution axes as the sweep goes).

        Repeat r of a trial is the same parameters with ``repeat=r`` and ``seed`` + r: another initialisation
        and data order, so a difference between points is measured against run-to-run spread, not one draw.
        The repeats run in rounds (every trial once, then again), so a drift in the machine's speed over the
        sweep falls on every point alike rather than on the points that happen to run last; with more than
        one round, each round's trials run in an order of their own drawn from ``seed``, so a point's place in
        the sweep (warm caches, the machine's load) is not tied to its parameters, as the report's test of
        the repeats assumes.
        """
        rng = random.Random(seed)
        if self.search.search == "random":
            trials = [self.draw(rng) for _ in range(self.num_samples)]
        else:
            trials = []
            samples = 1 if self.search.adaptive else self.num_samples
            for grid in self.grids:
                names = list(grid)
                values = [v if isinstance(v, list) else [v] for v in grid.values()]
                for point in itertools.product(*values):
                    for _ in range(samples):
                        chosen = {n: sample(v, rng) if isinstance(v, dict) else v for n, v in zip(names, point)}
                        trials.append(TrialParams.from_dict({**self.fixed, **chosen}))
        order = random.Random(f"run order {seed}")
        planned = []
        for repeat in range(self.repeats):
            round_ = [dataclasses.replace(trial, seed=trial.seed + repeat, repeat=repeat) for trial in trials]
            if self.repeats > 1:
                order.shuffle(round_)
            planned += round_
        return planned

    def draw(self, rng: random.Random) -> TrialParams:
        """One trial of a random search: a grid at random, then every axis of it drawn."""
        grid = rng.choice(self.grids)
        chosen = {n: sample(v, rng) if isinstance(v, dict) else rng.choice(v) for n, v in grid.items()}
        return TrialParams.from_dict({**self.fixed, **chosen})

    def axis_kinds(self) -> AxisKinds:
        """The distribution axes of every grid, as a searcher sees them."""
        distributions, categorical = {}, {}
        for grid in self.grids:
            for name, value in grid.items():
                if isinstance(value, dict):
                    ((kind, args),) = value.items()
                    distributions[name] = kind
                    if kind == "choice":
                        categorical[name] = list(args)
        return AxisKinds(distributions, categorical)

    def searched_axes(self) -> dict[str, str]:
        """The distribution axes Optuna searches, by kind: the same names and kinds in every grid (a grid's
        bounds are its own, as the learning rate's range around each batch size's scaling rule)."""
        found = [{n: next(iter(v)) for n, v in grid.items() if isinstance(v, dict)} for grid in self.grids]
        if any(f != found[0] for f in found):
            raise UsageError(f"space {self.name}: search optuna needs the same distribution axes in every grid")
        return found[0]

    def distributions_of(self, params: TrialParams) -> dict[str, dict[str, Any]]:
        """The distribution axes (``{name: {kind: args}}``) of the first grid that holds ``params`` as a point."""
        for grid in self.grids:
            if all(getattr(params, n) in v for n, v in grid.items() if isinstance(v, list)):
                return {n: v for n, v in grid.items() if isinstance(v, dict)}
        raise UsageError(f"space {self.name}: no grid holds the trial {params.key()}")


def selects(grid: dict[str, Any], key: str, values: list) -> bool:
    return any(v in values for v in grid[key])


def selected(grid: dict[str, Any], key: str, values: list) -> dict[str, Any]:
    """``grid`` with list axis ``key`` cut to ``values`` (a grid without it as a list takes them all)."""
    own = grid.get(key)
    return {**grid, key: [v for v in own if v in values] if isinstance(own, list) else values}


def dedupe(grids: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for grid in grids:
        if grid not in out:
            out.append(grid)
    return out


def check_keys(values: dict[str, Any], where: str) -> None:
    known = TrialParams.field_names()
    for key in values:
        if key not in known:
            raise UsageError(f"{where}: {unknown_name('trial parameter', key, known, PARAMETERS_LISTING)}")


def sample(spec: dict[str, Any], rng: random.Random) -> Any:
    ((kind, args),) = spec.items()
    if kind == "uniform":
        return rng.uniform(*args)
    if kind == "loguniform":
        import math

        return math.exp(rng.uniform(math.log(args[0]), math.log(args[1])))
    if kind == "randint":
        return rng.randrange(args[0], args[1])
    return rng.choice(args)


def check_axis(name: str, value: Any, where: str) -> None:
    if isinstance(value, list):
        if not value:
            raise UsageError(f"{where}: axis {name!r} has no values")
        return
    if isinstance(value, dict):
        if len(value) != 1 or next(iter(value)) not in DISTRIBUTIONS:
            hint = did_you_mean(next(iter(value)), DISTRIBUTIONS) if len(value) == 1 else ""
            raise UsageError(
                f"{where}: axis {name!r} must be a list of values or one of "
                f"{{{', '.join(DISTRIBUTIONS)}: [...]}}, got {value!r}{hint}"
            )
        ((kind, args),) = value.items()
        if not isinstance(args, list) or (kind != "choice" and len(args) != DISTRIBUTIONS[kind]) or not args:
            raise UsageError(
                f"{where}: distribution {kind} of axis {name!r} needs a list of {DISTRIBUTIONS[kind]} values"
            )
        if kind != "choice":
            value[kind] = low, high = [bound(name, kind, a, where) for a in args]
            if not low < high or (kind == "loguniform" and low <= 0):
                positive = " and low > 0" if kind == "loguniform" else ""
                raise UsageError(f"{where}: axis {name!r}: {kind} needs low < high{positive}, got {args}")
        return
    raise UsageError(f"{where}: axis {name!r} must be a list of values or a distribution, got {value!r}")


def bound(name: str, kind: str, value: Any, where: str) -> float | int:
    """A distribution bound; YAML reads ``1e-4`` (no dot) as a string, so numbers in strings count."""
    try:
        number = None if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or (kind == "randint" and not number.is_integer()):
        wanted = "integers" if kind == "randint" else "numbers"
        raise UsageError(f"{where}: axis {name!r}: {kind} bounds must be {wanted}, got {value!r}")
    return int(number) if kind == "randint" else number


class _Yaml12Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` whose booleans are YAML 1.2's, ``true`` and ``false`` only.

    YAML 1.1 also reads on/off/yes/no (any case) as booleans, so ``prepare: off`` or
    ``--set prepare=[off,pixels]`` would hand a string parameter ``False``.
    """


_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` with YAML 1.2's booleans (``_Yaml12Loader``): what spaces and ``--set`` values use."""
    return yaml.load(text, Loader=_Yaml12Loader)


def parse_space(name: str, text: str, where: str) -> SearchSpace:
    try:
        doc = load_yaml(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise UsageError(f"{where}: not valid YAML{at}: {getattr(e, 'problem', e)}") from None
    return space_from_mapping(name, doc, where)


def space_from_mapping(name: str, doc: Any, where: str) -> SearchSpace:
    """A space from the mapping a space file holds (``description``, ``axes``, ``fixed``, ...)."""
    if not isinstance(doc, dict):
        raise UsageError(f"{where}: a space file is a mapping with keys {', '.join(sorted(SPACE_KEYS))}")
    unknown = set(doc) - SPACE_KEYS
    if unknown:
        raise UsageError(f"{where}: {unknown_name('key', sorted(unknown)[0], sorted(SPACE_KEYS))}")
    axes = doc.get("axes") or {}
    grids = axes if isinstance(axes, list) else [axes]
    for grid in grids:
        if not isinstance(grid, dict):
            raise UsageError(f"{where}: 'axes' must map parameter names to values (or be a list of such maps)")
        check_keys(grid, where)
        for axis, value in grid.items():
            check_axis(axis, value, where)
    fixed = doc.get("fixed") or {}
    if not isinstance(fixed, dict):
        raise UsageError(f"{where}: 'fixed' must map parameter names to values")
    check_keys(fixed, where)
    num_samples = doc.get("num_samples", 1)
    if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples < 1:
        raise UsageError(f"{where}: num_samples must be a positive integer, got {num_samples!r}")
    repeats = check_repeats(doc.get("repeats", 1), f"{where}: repeats")
    requires = doc.get("requires", "") or ""
    if requires not in ("", "gpu"):
        raise UsageError(f"{where}: requires must be 'gpu' or absent, got {requires!r}")
    return SearchSpace(
        name=name,
        description=str(doc.get("description", "")).strip(),
        grids=grids or [{}],
        fixed=fixed,
        num_samples=num_samples,
        requires=requires,
        drop_unfit=bool(doc.get("drop_unfit", False)),
        search=search_config_from(doc, where),
        repeats=repeats,
    )


def check_repeats(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UsageError(f"{where} must be a positive integer, got {value!r}")
    return value


def list_spaces() -> dict[str, str]:
    """Bundled spaces: name -> description."""
    return {p.stem: load_space(p.stem).description for p in sorted(SPACES_DIR.glob("*.yaml"))}


def load_space(name_or_path: str) -> SearchSpace:
    """A bundled space by name, or a user's YAML file by path."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise UsageError(f"space file {name_or_path} does not exist")
        return parse_space(path.stem, path.read_text(), str(path))
    bundled = SPACES_DIR / f"{name_or_path}.yaml"
    if not bundled.is_file():
        names = [p.stem for p in sorted(SPACES_DIR.glob("*.yaml"))]
        listing = "--list-spaces; or give a path to a .yaml file"
        raise UsageError(unknown_name("space", name_or_path, names, listing))
    return parse_space(name_or_path, bundled.read_text(), str(bundled))
