"""What a sweep measured: model, data, precision, engine, devices, software and repeats, read from its tables
and ``sweep.json`` alone (the facts a reader needs before any number)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from analysis.rows.groups import configuration_key
from analysis.rows.load import SweepData

# sweep.json's "versions": the packages the report names, in this order.
PACKAGES = ("raysweep", "ray", "torch", "deepspeed", "timm", "python")


@dataclass(frozen=True)
class Fact:
    name: str
    value: str


@dataclass
class Setup:
    facts: list[Fact]
    missing: list[str] = field(default_factory=list)  # facts the sweep did not record
    models: list[str] = field(default_factory=list)
    datasets: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)  # distinct device names
    device_kinds: list[str] = field(default_factory=list)  # cpu | gpu

    def value(self, name: str) -> str:
        return next((f.value for f in self.facts if f.name == name), "")


def distinct(trials: pd.DataFrame, column: str) -> list[str]:
    if column not in trials:
        return []
    return [str(v) for v in dict.fromkeys(trials[column].dropna().tolist())]


def one_or_all(values: list[str], none: str = "not recorded") -> str:
    """A fixed value as itself, a varied one as ``a, b (varied)``."""
    if not values:
        return none
    return values[0] if len(values) == 1 else f"{', '.join(values)} (varied)"


def device_names(trials: pd.DataFrame) -> list[str]:
    names = []
    for value in trials["device_names"]:
        if value is None or isinstance(value, float):
            continue
        names += [str(n) for n in (value.tolist() if hasattr(value, "tolist") else value)]
    return list(dict.fromkeys(names))


def devices_fact(trials: pd.DataFrame, names: list[str]) -> str:
    counts = sorted({int(n) for n in trials["num_workers"].dropna()})
    ranks = ", ".join(str(c) for c in counts)
    kind = one_or_all(distinct(trials, "device"))
    named = one_or_all(names, none="names not recorded")
    return f"{named}; {ranks} rank(s) a trial ({kind})"


def precision_fact(trials: pd.DataFrame) -> str:
    amps = trials["amp"] if "amp" in trials else pd.Series([None] * len(trials))
    pairs = dict.fromkeys(
        f"{p}" + (f" (amp: {a})" if pd.notna(a) and a not in ("none", "auto") else "")
        for p, a in zip(trials["precision"], amps)
    )
    return one_or_all([str(p) for p in pairs])


def engine_fact(trials: pd.DataFrame) -> str:
    engines = []
    for engine, stage in zip(trials["engine"], trials.get("zero_stage", pd.Series([None] * len(trials)))):
        engines.append(f"{engine} ZeRO-{int(stage)}" if engine == "deepspeed" and pd.notna(stage) else str(engine))
    return one_or_all(list(dict.fromkeys(engines)))


def image_fact(trials: pd.DataFrame) -> str:
    sizes = [int(float(v)) for v in distinct(trials, "image_size")]
    return one_or_all([f"{s} px" if s else "the model's own" for s in sizes])


def data_fact(trials: pd.DataFrame) -> str:
    samples = sorted({int(v) for v in trials["samples_per_epoch"].dropna()})
    per_epoch = f"; {', '.join(map(str, samples))} training samples an epoch" if samples else ""
    return one_or_all(distinct(trials, "dataset")) + per_epoch


def software_fact(versions: dict) -> tuple[str, list[str]]:
    parts = [f"{name} {versions[name]}" for name in PACKAGES if versions.get(name)]
    commit = versions.get("raysweep_commit") or versions.get("git_commit")
    if commit:
        parts.append(f"checkout {str(commit)[:12]}")
    missing = [] if versions.get("raysweep") else ["raysweep's version (not in sweep.json)"]
    if not versions:
        missing = ["package versions (sweep.json has none)"]
    return ", ".join(parts) or "not recorded", missing


def repeats_fact(trials: pd.DataFrame) -> str:
    counts = Counter(trials.apply(configuration_key, axis=1)) if len(trials) else Counter()
    per_point = sorted(set(counts.values()))
    if not per_point:
        return "none"
    low, high = per_point[0], per_point[-1]
    span = f"{low}" if low == high else f"{low}–{high}"
    return f"{span} completed trial(s) per point ({len(counts)} point(s))"


def date_fact(data: SweepData) -> str:
    started = data.manifest.get("started_at")
    if started:
        return str(started).replace("T", " ")
    times = data.trials["started_at"].dropna() if "started_at" in data.trials else pd.Series(dtype=object)
    return str(times.min()) if len(times) else "not recorded"


def model_fact(trials: pd.DataFrame) -> str:
    """The model(s) with their trainable parameter count from the trials table, where it records one."""
    counts = sorted({int(n) for n in trials["trainable_params"].dropna()}) if "trainable_params" in trials else []
    if not counts:
        return one_or_all(distinct(trials, "model")) + " (parameter count not recorded)"
    return one_or_all(distinct(trials, "model")) + f" ({' / '.join(f'{n:,}' for n in counts)} trainable parameters)"


def measured_setup(data: SweepData) -> Setup:
    """The sweep's setup: each fact fixed across the trials, or every value where it varied."""
    trials = data.trials
    names = device_names(trials)
    kinds = distinct(trials, "device")
    nodes = sorted({int(n) for n in trials["num_nodes"].dropna()}) if "num_nodes" in trials else []
    software, missing = software_fact(data.manifest.get("versions") or {})
    cpu = [n.removeprefix("cpu: ") for n in names if n.startswith("cpu")]
    cpu_missing = "not recorded" + (" (GPU trials record their GPUs only)" if "gpu" in kinds else "")
    facts = [
        Fact("model", model_fact(trials)),
        Fact("data", data_fact(trials)),
        Fact("image size", image_fact(trials)),
        Fact("precision", precision_fact(trials)),
        Fact("engine", engine_fact(trials)),
        Fact("devices", devices_fact(trials, names)),
        Fact("nodes", ", ".join(map(str, nodes)) + " a trial" if nodes else "not recorded"),
        Fact("CPU", ", ".join(cpu) if cpu else cpu_missing),
        Fact("software", software),
        Fact("date", date_fact(data)),
        Fact("repeats", repeats_fact(trials)),
    ]
    if "trainable_params" not in trials or trials["trainable_params"].isna().all():
        missing = ["the model's parameter count", *missing]
    if not cpu:
        missing.append("the host CPU of GPU trials" if "gpu" in kinds else "the CPU")
    return Setup(facts, missing, distinct(trials, "model"), distinct(trials, "dataset"), names, kinds)
