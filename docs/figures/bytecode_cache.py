"""A fresh rank's first seconds, the bytecode cache on H100 hosts and start-up as the code stands
(docs/results/h100-first-step, h100-bytecode-cache, cpu-gc-freeze)."""

from __future__ import annotations

import json
import statistics

from . import count, figure, listed, records, span, spoken, summary, table
from .common import ab_runs, economy_runs, from_launch_cells, later_cell, median_of, setups


def cache_sweeps(cache: bool) -> list[dict]:
    return [r for r in summary("h100-bytecode-cache") if r["cache"] == cache]


def apart_on_each_host(key: str, new: list[dict], base: list[dict], hosts: list[str]) -> bool:
    """On every host, every sweep with the cache beyond every sweep without it: a higher duty cycle, fewer seconds."""
    sign = 1 if key == "duty_cycle" else -1
    return all(
        min(sign * r[key] for r in new if r["host"] == h) > max(sign * r[key] for r in base if r["host"] == h)
        for h in hosts
    )


@figure("h100-bytecode-cache-by-host")
def h100_bytecode_cache_by_host() -> str:
    """The gain the cache's sweeps support: per host where both were run, and pooled only where ranges part."""
    new, base = cache_sweeps(True), cache_sweeps(False)
    hosts = [h for h in dict.fromkeys(r["host"] for r in base) if any(r["host"] == h for r in new)]
    paired = [r for r in new if r["host"] in hosts]
    quantities = {"duty_cycle": "duty cycle", "first_setup_s": "first trial's `setup_s`"}
    apart = [name for key, name in quantities.items() if apart_on_each_host(key, paired, base, hosts)]
    pooled = {}
    for key, name in quantities.items():
        fmt = ".3f" if key == "duty_cycle" else ".2f"
        with_, without = [r[key] for r in new], [r[key] for r in base]
        overlap = min(with_) <= max(without) and min(without) <= max(with_)
        pooled[name] = (span(with_, fmt), span(without, fmt), overlap)
    on_hosts = (
        f"on the {count(len(hosts))} hosts run both ways ({len(base)} sweeps without the cache, {len(paired)} with), "
        + (
            f"every sweep with the cache beat every sweep without it on the same host in {spoken(apart)}"
            if apart
            else "no quantity parted every sweep with the cache from every sweep without it on the same host"
        )
    )
    overlapping = [f"{name} {with_} with, {without} without" for name, (with_, without, over) in pooled.items() if over]
    if not overlapping:
        return on_hosts + "; pooled over every host the ranges part as well"
    all_hosts = count(len({r["host"] for r in new}))
    return (
        on_hosts + f"; pooled over every host ({len(new)} sweeps with the cache on {all_hosts} hosts) the ranges"
        f" overlap ({'; '.join(overlapping)}), so no gain is claimed beyond the pairing on a host"
    )


@figure("h100-first-step-probe")
def h100_first_step_probe() -> str:
    phases = ["import torch, ray.train.torch", "process group, device", "imports", "model", "engine", "first step"]
    runs = list(records("h100-first-step", "probe").items())
    # the run script's order: two runs under cProfile, one with NCCL's communicator made eagerly, one plain
    labels = ["profiled", "profiled", "eager NCCL", "plain"]
    assert [record.startswith("eager True") for record, _ in runs] == [False, False, True, False], runs
    body = [[label, *(f"{run[phase]:.2f}" for phase in phases)] for label, (_, run) in zip(labels, runs)]
    header = ["run", "torch, `ray.train.torch` imported", "process group, device", "timm, DeepSpeed, trial code"]
    return table([*header, "model", "engine", "first step"], body, "lrrrrrr")


def first_step_profiles() -> dict[str, dict[str, float]]:
    """The rank's first profiled engine build (``profile1``) and its import tree, from ``summary-profiles.csv``."""
    return {
        "build": records("h100-first-step", "profile1", "summary-profiles.csv")["engine build"],
        "imports": records("h100-first-step", "importtime", "summary-profiles.csv")["import"],
    }


@figure("h100-first-step-compile-seconds")
def h100_first_step_compile_seconds() -> str:
    return f"{first_step_profiles()['build']['compile s']:.1f} s"


@figure("h100-first-step-profile")
def h100_first_step_profile() -> str:
    p = first_step_profiles()
    probes = list(records("h100-first-step", "probe").values())
    group = {run["eager"]: [] for run in probes}
    engine = {run["eager"]: [] for run in probes}
    for run in probes:
        group[run["eager"]].append(run["process group, device"] - run["import torch, ray.train.torch"])
        engine[run["eager"]].append(run["engine"] - run["model"])
    build, imports = p["build"], p["imports"]
    return (
        f"- **Python compiles the packages' modules again in every process.** The first engine build's profile\n"
        f"  (`profile1`): of its {build['seconds']:.2f} s, {build['compile s']:.2f} s are `builtins.compile`, "
        f"{build['compile calls']:.0f} modules compiled from source (torch's\n"
        f"  compiler stack, which `deepspeed.initialize` imports, networkx, jinja2). The image sets\n"
        f"  `PYTHONDONTWRITEBYTECODE=1` and ships torch, sympy, networkx and jinja2 with no current bytecode\n"
        f"  (`../h100-bytecode-cache/`, call2's `diag.py`), so nothing compiled is ever kept. The\n"
        f"  import tree says the same of the imports: `import timm` {imports['timm s']:.1f} s, "
        f"{imports['torchvision s']:.1f} s of it torchvision's import of\n"
        f"  `torch._dynamo` (sympy alone {imports['sympy s']:.1f} s; the 2-core machine's import tree, whose "
        f"packages have their\n  bytecode, is not kept). `raysweep.runtime.caches.bytecode_cache` is the answer "
        f"(`../h100-bytecode-cache/`).\n"
        f"- NCCL's communicator: DeepSpeed's first broadcasts took {build['deepspeed broadcast s']:.2f} s in the "
        f"profiled build. Made at\n  `init_process_group` instead (`--eager`, one run), the process group took "
        f"{span(group[1.0], '.2f')} s against {span(group[0.0], '.2f')} s and the\n  engine's build was no shorter "
        f"({span(engine[1.0], '.2f')} s against {engine[0.0][-1]:.2f} s, the run not profiled): nothing to gain by "
        f"moving it."
    )


@figure("h100-first-step-sweeps")
def h100_first_step_sweeps() -> str:
    runs = economy_runs("h100-first-step")
    notes = {"new1": "673c4d0: `gc.freeze`", "base1": "549c25f"}
    body = [
        [
            f"{tag} ({note})",
            f"{setups(runs[tag])[0]:.2f} s",
            listed(setups(runs[tag])[1:], ".2f") + " s",
            f"{runs[tag]['duty']:.3f}",
        ]
        for tag, note in notes.items()
    ]
    return table(["sweep", "first trial's `setup_s`", "later `setup_s`", "duty cycle"], body, "lrrr")


@figure("h100-first-step-phases")
def h100_first_step_phases() -> str:
    runs = economy_runs("h100-first-step")
    starts = records("h100-first-step", "timeline")["new1"]

    def phase(tag: str, name: str) -> float:
        return runs[tag][f"first trial's phases.{name}"]

    worker_before = starts["Tune starts the first trial"] - starts["process started: RayTrainWorker"]
    return (
        f"it **{phase('new1', 'worker_started'):.2f} s** (new1) and {phase('base1', 'worker_started'):.2f} s (base1) "
        f"after its start, then took {phase('new1', 'model_built') - phase('new1', 'data_loaded'):.1f} s for the "
        f"model, {phase('new1', 'engine_ready') - phase('new1', 'model_built'):.1f} s for the engine\nand "
        f"{phase('new1', 'first_step') - phase('new1', 'engine_ready'):.2f} s to its first step. Its worker process "
        f"had started {worker_before:.1f} s before the trial (new1's process starts): "
        f"{worker_before + phase('new1', 'first_step'):.1f} s\nfrom the process's start to its first step, most of it "
        "imports."
    )


def cache_runs(*calls: str) -> list[tuple[str, dict[str, float]]]:
    """The sweeps of the given calls in run order: (tag, its economy line's figures)."""
    out = []
    for call in calls:
        out += [(tag, run) for tag, run in records("h100-bytecode-cache", f"{call}/table", "summary-logs.csv").items()]
    return out


STARTED = "first trial's phases.worker_started"  # seconds after Tune started the trial


def cache_table(*calls: str) -> str:
    body = []
    for i, (tag, r) in enumerate(cache_runs(*calls)):
        duty = f"{r['duty']:.3f}"
        body.append(
            [
                tag + (" (cache empty at launch)" if i == 0 else ""),
                f"{r['setup_s[0]']:.2f} s",
                f"{r[STARTED]:.2f} s",
                later_cell(r),
                f"**{duty}**" if tag.startswith("new") else duty,
                *from_launch_cells(r),
            ]
        )
    header = ["sweep (run order)", "first trial's `setup_s`", "its rank started it after", "later `setup_s`"]
    return table([*header, "duty cycle", "first step from launch", "duty from launch"], body, "lrrrrrr")


@figure("h100-bytecode-cache-host-a")
def h100_bytecode_cache_host_a() -> str:
    return cache_table("call1", "call2")


@figure("h100-bytecode-cache-host-b")
def h100_bytecode_cache_host_b() -> str:
    return cache_table("call3")


@figure("h100-bytecode-cache-host-a-summary")
def h100_bytecode_cache_host_a_summary() -> str:
    runs = cache_runs("call1", "call2")
    new = [r for tag, r in runs if tag.startswith("new")]
    base = [r for tag, r in runs if tag.startswith("base")]
    warm = [r for tag, r in runs if tag in ("new2", "new3")]  # once the cache holds the modules
    duty_new, duty_base = [r["duty"] for r in new], [r["duty"] for r in base]
    assert min(duty_new) > max(duty_base)  # the text says: every sweep's above every one without
    gains = [b["launch to first step"] - n["launch to first step"] for n in warm for b in base]
    return (
        f"duty cycle **{statistics.median(duty_new):.3f}** ({span(duty_new, '.3f')}) against "
        f"{statistics.median(duty_base):.3f} ({span(duty_base, '.3f')}), the first trial's `setup_s`\n"
        f"{median_of([r['setup_s[0]'] for r in new], '.2f', ' s')} against "
        f"{statistics.median(r['setup_s[0]'] for r in base):.1f} s ({span([r['setup_s[0]'] for r in base], '.2f')}), "
        f"every sweep's above every one without; later trials'\n`setup_s` "
        f"{span([v for r in new for v in setups(r)[1:]], '.2f')} s (target 5 s), `teardown_s` "
        f"{span([v for r in new + base for v in setups(r, 'teardown_s')], '.3f')} s. Once the cache holds the modules "
        f"(new2, new3)\nthe first step comes {span(gains, '.0f')} s sooner after launch "
        f"({' and '.join(format(r['launch to first step'], '.1f') for r in warm)} s against "
        f"{' and '.join(format(v, '.1f') for v in sorted(r['launch to first step'] for r in base))} s)"
    )


@figure("h100-bytecode-cache-host-b-summary")
def h100_bytecode_cache_host_b_summary() -> str:
    runs = cache_runs("call3")
    new = [r for tag, r in runs if tag.startswith("new")]
    (base,) = [r for tag, r in runs if tag.startswith("base")]
    later = [v for r in new for v in setups(r)[1:]]
    host_a_base = [r["duty"] for tag, r in cache_runs("call1", "call2") if tag.startswith("base")]
    return (
        f"duty cycle **{statistics.median(r['duty'] for r in new):.3f}** ({span([r['duty'] for r in new], '.3f')}), "
        f"later trials' `setup_s` median {statistics.median(later):.2f} s ({span(later, '.2f')}),\n`teardown_s` "
        f"{span([v for r in new for v in setups(r, 'teardown_s')], '.3f')} s, the first trial's `setup_s` "
        f"{median_of([r['setup_s[0]'] for r in new], '.2f', ' s')}. This host is faster than\ncall1's: its one sweep "
        f"without the cache reached {base['duty']:.3f} (call1/call2's host: {listed(sorted(host_a_base), '.3f')}), "
        f"below every sweep\nwith it"
    )


@figure("h100-bytecode-cache-both-hosts")
def h100_bytecode_cache_both_hosts() -> str:
    runs = cache_runs("call1", "call2", "call3")
    new = [r["duty"] for tag, r in runs if tag.startswith("new")]
    base = [r["duty"] for tag, r in runs if tag.startswith("base")]
    return (
        f"the {count(len(new))} sweeps with the cache: duty cycle {statistics.median(new):.3f} ({span(new, '.3f')}),\n"
        f"every one at or above {min(new):.3f}; the {count(len(base))} without: {statistics.median(base):.3f} "
        f"({span(base, '.3f')})"
    )


def cache_log(source: str) -> dict[str, dict[str, float]]:
    return records("h100-bytecode-cache", source, "summary-logs.csv")


@figure("h100-bytecode-cache-end-line")
def h100_bytecode_cache_end_line() -> str:
    end = cache_log("call3/new1")["sweep"]
    return (
        f'"{end["trials"]:.0f} trials in {end["wall_s"]:.0f} s; duty cycle {end["duty_cycle"]:.2f} '
        f'({end["duty_cycle_from_launch"]:.2f} from\nlaunch), median setup {end["median_setup_s"]:.1f} s"'
    )


@figure("h100-bytecode-cache-call4")
def h100_bytecode_cache_call4() -> str:
    bench = cache_log("call4/bench")
    floor = bench["cold-process floor"]
    rows = [bench[f"batch {b} compile False"] for b in (64, 128, 256)]
    return (
        f"{floor['first step']:.1f} s to\n  its first step's end (`import timm` ends at {floor['import timm']:.1f} s). "
        f"Its 3-trial sweep of 30 steps a trial: first trial's\n  `setup_s` {rows[0]['setup s']:.1f} s, later "
        f"{rows[1]['setup s']:.1f} and {rows[2]['setup s']:.1f} s (its first step after the sweep's launch is not "
        "kept). "
        f"The bench's throughput\n  rows: {' / '.join(format(r['ratio'], '.3f') for r in rows)} of plain PyTorch at "
        f"micro batch 64 / 128 / 256"
    )


@figure("h100-bytecode-cache-call5")
def h100_bytecode_cache_call5() -> str:
    floors = [run["phases.first step"] for run in cache_log("call5/floor").values()]
    floor = statistics.median(floors)
    new4 = cache_log("call5/table")["new4"]
    starts = cache_log("call5/timeline")["new4"]
    ray_up = min(v for k, v in starts.items() if k.startswith("process started: "))
    started = new4["first trial's phases.worker_started"]
    later = " and ".join(format(v, ".2f") for v in setups(new4)[1:])
    return (
        f"the floor **{floor:.2f} s** ({span(floors, '.2f')}, three processes: `floor.log`); then issue 13's\n"
        f"  sweep, `new4`: duty cycle **{new4['duty']:.3f}**, later `setup_s` {later} s, "
        f"`teardown_s` <= {max(setups(new4, 'teardown_s')):.3f} s; the first\n  trial's `setup_s` "
        f"{new4['setup_s[0]']:.2f} s (floor + 3 s: {floor + 3:.1f} s), its rank started "
        f"{started:.2f} s after Tune started the trial. From\n  the sweep's launch "
        f"its first step came at {new4['launch to first step']:.1f} s, the floor + "
        f"{new4['launch to first step'] - floor:.1f} s: Ray's own start takes {ray_up:.1f} s before the\n  first "
        f"actor's process exists, and Tune starts the trial at {starts['Tune starts the first trial']:.1f} s"
    )


@figure("h100-bytecode-cache-torch-modules")
def h100_bytecode_cache_torch_modules() -> str:
    torch = cache_log("call3/diag")["torch"]
    return f"{torch['current']:.0f} of {torch['modules']:.0f} torch modules current"


@figure("start-up-now")
def start_up_now() -> str:
    """The code as it stands: the bytecode cache's H100 sweeps with the cache, and the 2-core gc.freeze A/B's NEW."""
    gpu = cache_sweeps(True)
    hosts = len({r["host"] for r in gpu})

    def on_cpu(metric: str, fmt: str, unit: str = "") -> str:
        return median_of(ab_runs("cpu-gc-freeze", "new", metric), fmt, unit)

    rows = [
        [
            "later trials' `setup_s`",
            median_of([s for r in gpu for s in json.loads(r["later_setup_s"])], ".2f", " s"),
            on_cpu("second setup_s", ".2f", " s") + ", the second trial",
        ],
        ["`teardown_s`", f"<= {max(r['max_teardown_s'] for r in gpu):.3f} s", "not recorded"],
        [
            "first trial's `setup_s`",
            median_of([r["first_setup_s"] for r in gpu], ".2f", " s"),
            on_cpu("first setup_s", ".2f", " s"),
        ],
        [
            "first step after launch",
            median_of([r["first_step_from_launch_s"] for r in gpu], ".1f", " s"),
            on_cpu("launch to first step", ".1f", " s"),
        ],
        [
            "duty cycle from the first trial",
            median_of([r["duty_cycle"] for r in gpu], ".3f"),
            on_cpu("duty_cycle", ".3f"),
        ],
        [
            "duty cycle from the launch",
            median_of([r["duty_cycle_from_launch"] for r in gpu], ".3f"),
            on_cpu("duty from launch", ".3f"),
        ],
    ]
    runs = len(ab_runs("cpu-gc-freeze", "new", "duty_cycle"))
    header = ["", f"H100 hosts ({len(gpu)} sweeps on {count(hosts)} hosts)", f"2 CPU cores ({runs} sweeps)"]
    return table(header, rows, "lrr")
