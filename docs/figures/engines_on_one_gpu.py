"""Every engine on one H100, megatron-core beside ZeRO-1 and DDP, and a shared group's later trials
(docs/results/h100-engines-1gpu, docs/results/h100-megatron)."""

from __future__ import annotations

import statistics

from . import count, figure, span, spoken, summary, table

# in the order the tables list them: DeepSpeed by ZeRO stage, then the others
ENGINE_NAMES = {
    "deepspeed": "DeepSpeed ZeRO-{zero_stage}",
    "megatron": "megatron-core",
    "ddp": "DDP",
    "accelerate": "Accelerate (DDP)",
    "fsdp": "FSDP2",
}


def engine_name(row: dict) -> str:
    """A summary row's engine as the tables name it (its ZeRO stage for DeepSpeed)."""
    return ENGINE_NAMES[row["engine"]].format(zero_stage=int(row["zero_stage"] or 0))


def engine_rank(row: dict) -> tuple[int, int]:
    """Where a summary row's engine stands in the tables (``ENGINE_NAMES``'s order, DeepSpeed by ZeRO stage)."""
    return list(ENGINE_NAMES).index(row["engine"]), int(row["zero_stage"] or 0)


def engine_repeats(experiment: str = "h100-engines-1gpu") -> dict[str, list[dict]]:
    """Each engine's trials of an experiment's sweep in run order (repeat 0, 1, 2), the engines in the tables'
    order (a sweep with repeats runs each round's points in a random order of its own)."""
    by_engine: dict[str, list[dict]] = {}
    for r in sorted(summary(experiment), key=lambda r: (engine_rank(r), r["started_at"])):
        by_engine.setdefault(engine_name(r), []).append(r)
    return by_engine


def engine_table(experiment: str) -> str:
    body = []
    for name, trials in engine_repeats(experiment).items():
        body.append(
            [
                name,
                " / ".join(f"{r['throughput']:.0f}" for r in trials),
                f"{statistics.median(r['step_time_ms'] for r in trials):.1f}",
                " / ".join(f"{r['peak_mem_gib']:.1f}" for r in trials),
                f"{statistics.median(r['joules_per_sample'] for r in trials):.3f}",
            ]
        )
    header = ["engine", "samples/s, repeats 1 / 2 / 3", "step (ms), median", "peak memory (GiB), repeats 1 / 2 / 3"]
    return table([*header, "J/sample, median"], body, "lrrrr")


@figure("h100-engines-1gpu")
def h100_engines_1gpu() -> str:
    return engine_table("h100-engines-1gpu")


@figure("h100-megatron")
def h100_megatron() -> str:
    return engine_table("h100-megatron")


@figure("h100-megatron-says")
def h100_megatron_says() -> str:
    trials = engine_repeats("h100-megatron")

    def median(name: str, column: str) -> float:
        return statistics.median(r[column] for r in trials[name])

    megatron = median("megatron-core", "throughput")
    return (
        f"megatron-core trains at {megatron / median('DDP', 'throughput'):.2f}x DDP's throughput and "
        f"{megatron / median('DeepSpeed ZeRO-1', 'throughput'):.2f}x DeepSpeed ZeRO-1's (medians of "
        f"{len(trials['megatron-core'])}), with {median('megatron-core', 'peak_mem_gib'):.1f} GiB peak memory "
        f"against {median('DDP', 'peak_mem_gib'):.1f} and {median('DeepSpeed ZeRO-1', 'peak_mem_gib'):.1f}."
    )


@figure("h100-engines-1gpu-says")
def h100_engines_1gpu_says() -> str:
    trials = engine_repeats()
    ddp, accelerate = trials["DDP"], trials["Accelerate (DDP)"]
    ratios = [a["throughput"] / d["throughput"] for a, d in zip(accelerate, ddp)]
    spreads = {name: spread([r["throughput"] for r in rows]) for name, rows in trials.items()}
    memory_same = all(len({r["peak_mem_gib"] for r in rows}) == 1 for rows in trials.values())
    ranked = sorted(trials, key=lambda name: -statistics.median(r["throughput"] for r in trials[name]))
    memory = ", and each engine's peak memory is the same in every repeat" if memory_same else ""
    tight = [name for name, s in spreads.items() if s <= 0.02]
    if len(tight) == len(spreads):
        widest = max(spreads, key=spreads.get)
        repeats = (
            f"A group's later trials run as its first did: every engine's three repeats agree within "
            f"{spreads[widest]:.1%} ({widest}'s, the widest){memory}."
        )
    else:
        # how much a fresh process of each engine varies from round to round on the sweep's host
        fresh = {t["engine"]: spread(t["fresh"]) for t in shared_against_fresh(SWEEP_HOST_ROUNDS).values()}
        wide = [name for name in spreads if name not in tight]
        compared = [name for name in wide if name in fresh]
        within_fresh = all(spreads[name] <= fresh[name] for name in compared)
        repeats = (
            f"The three repeats of {spoken(tight)} agree within {max(spreads[n] for n in tight):.1%}{memory}; those "
            f"of {spoken([f'{name} ({spreads[name]:.0%})' for name in wide])} spread wider"
            + (
                f", {'each less' if within_fresh else 'not all less'} than a fresh process of its engine varies "
                f"between rounds of `later_trials.py` on this host ({spoken([f'{fresh[n]:.0%}' for n in compared])})"
                if compared
                else ""
            )
            + "."
        )
    return (
        f"Accelerate reaches {span(ratios, '.3f')}x DDP's throughput with the same peak memory: its DDP path adds "
        f"nothing measurable on one GPU. {repeats} By median throughput: {', '.join(ranked)}."
    )


def spread(values: list[float]) -> float:
    """The values' range over their median."""
    return (max(values) - min(values)) / statistics.median(values)


SCENARIO_NAMES = {
    "shared-before": "one process, the old teardown",
    "shared-now": "one process, today's teardown",
    "fresh": "a fresh process each",
    "fresh-zero3-linear": "fresh, with ZeRO-3's F.linear",
}


def later_trials() -> dict[str, dict[int, dict]]:
    """docs/results/h100-engines-1gpu's later_trials.py rows: scenario -> trial index -> row."""
    out: dict[str, dict[int, dict]] = {}
    for r in summary("h100-engines-1gpu", "summary-later.csv"):
        out.setdefault(r["scenario"], {})[int(r["trial"])] = r
    return out


@figure("h100-later-trials")
def h100_later_trials() -> str:
    rows = later_trials()
    body = []
    for index, first in sorted(rows["shared-before"].items()):
        cells = [str(index + 1), engine_name(first)]
        for scenario in SCENARIO_NAMES:
            r = rows.get(scenario, {}).get(index)
            cells.append("" if r is None else f"{r['img_s']:.0f} ({r['peak_gib']:.1f})")
        cells.append(f"{rows['shared-before'][index]['allocated_after_gib']:.2f} / "
                     f"{rows['shared-now'][index]['allocated_after_gib']:.2f}")  # fmt: skip
        body.append(cells)
    header = ["trial", "engine", *(f"{name}: img/s (peak GiB)" for name in SCENARIO_NAMES.values())]
    return table([*header, "GiB left after it, old / today's teardown"], body, "rlrrrrr")


@figure("h100-later-trials-says")
def h100_later_trials_says() -> str:
    rows = later_trials()
    before, now, fresh = rows["shared-before"], rows["shared-now"], rows["fresh"]
    linear = rows["fresh-zero3-linear"]
    last = max(before)
    now_over_fresh = {i: now[i]["img_s"] / fresh[i]["img_s"] for i in fresh}
    low, high = min(now_over_fresh, key=now_over_fresh.get), max(now_over_fresh, key=now_over_fresh.get)

    linear_cost = [linear[i]["img_s"] / fresh[i]["img_s"] for i in linear]
    return (
        f"With the old teardown the process kept {before[last]['allocated_after_gib']:.1f} GiB of dead trials' "
        f"tensors by the end and every trial after ZeRO-3 ran with DeepSpeed's `F.linear`; the last trials ran at "
        f"{before[last - 1]['img_s']:.0f} (ZeRO-0) and {before[last]['img_s']:.0f} (FSDP2) img/s against "
        f"{now[last - 1]['img_s']:.0f} and {now[last]['img_s']:.0f} with today's. Today's teardown leaves "
        f"{max(r['allocated_after_gib'] for r in now.values()):.2f} GiB after every trial and each trial's peak "
        f"memory is a fresh process's; DeepSpeed's `F.linear` alone, in a fresh process, costs "
        f"{span([1 - r for r in linear_cost], '.0%')} of the throughput. Against a fresh process, today's shared "
        f"trials run at {now_over_fresh[low]:.3f}x ({engine_name(fresh[low])}) to "
        f"{now_over_fresh[high]:.3f}x ({engine_name(fresh[high])}): "
        f"single runs, so differences of that size are not established."
    )


# the rounds of shared-now against fresh: 2026-12-07 (the tree's script, the sweep's host) and 2026-12-06 (the
# script as at a86f783, another host)
ROUNDS = {"h100-later-rounds-3": "summary-later-rounds-3.csv", "h100-later-rounds": "summary-later-rounds.csv"}
SWEEP_HOST_ROUNDS = "summary-later-rounds-3.csv"  # run on the same machine as summary.csv's sweep


def later_rounds(name: str) -> dict[tuple[str, int], dict[int, dict]]:
    """A rounds table: (scenario, trial index) -> round -> that trial's row."""
    out: dict[tuple[str, int], dict[int, dict]] = {}
    for r in summary("h100-engines-1gpu", name):
        out.setdefault((r["scenario"], int(r["trial"])), {})[int(r["round"])] = r
    return out


def shared_against_fresh(name: str) -> dict[int, dict]:
    """Each trial of the shared group (today's teardown) against a fresh process of its engine, round by round:
    trial index -> engine, img/s of each, shared / fresh of throughput and of peak memory, one per round."""
    rows = later_rounds(name)
    fresh = {engine_name(next(iter(by_round.values()))): by_round for (s, _), by_round in rows.items() if s == "fresh"}
    out = {}
    for (scenario, index), shared in sorted(rows.items()):
        if scenario != "shared-now":
            continue
        engine = engine_name(next(iter(shared.values())))
        pairs = [(shared[k], fresh[engine][k]) for k in sorted(set(shared) & set(fresh[engine]))]
        out[index] = {
            "engine": engine,
            "shared": [s["img_s"] for s, _ in pairs],
            "fresh": [f["img_s"] for _, f in pairs],
            "throughput": [s["img_s"] / f["img_s"] for s, f in pairs],
            "memory": [s["peak_gib"] / f["peak_gib"] for s, f in pairs],
            "peak": [s["peak_gib"] for s, _ in pairs],
        }
    return out


def median_span(values: list[float], fmt: str) -> str:
    """The median, and the range where the values differ: ``2428 (2414-2434)``."""
    middle, full = format(statistics.median(values), fmt), span(values, fmt)
    return middle if full == middle else f"{middle} ({full})"


def rounds_table(name: str) -> str:
    """Each trial of the shared group against a fresh process of its engine: medians (ranges) over the rounds."""
    trials = shared_against_fresh(name)
    body = [
        [
            str(index + 1),
            t["engine"],
            median_span(t["shared"], ".0f"),
            median_span(t["fresh"], ".0f"),
            median_span(t["throughput"], ".3f"),
            median_span(t["peak"], ".2f"),
            median_span(t["memory"], ".3f"),
        ]
        for index, t in trials.items()
    ]
    header = ["trial", "engine", "shared group: img/s", "fresh process: img/s", "shared / fresh, throughput",
              "shared: peak GiB", "shared / fresh, peak memory"]  # fmt: skip
    return table(header, body, "rlrrrrr")


def rounds_says(name: str) -> str:
    trials = shared_against_fresh(name)
    rounds = len(next(iter(trials.values()))["throughput"])
    later = {i: t for i, t in trials.items() if i > 0}  # the group's first trial has no trial before it

    def outside(t: dict, key: str) -> bool:
        return abs(statistics.median(t[key]) - 1) > 0.02

    throughput_out = [i for i, t in later.items() if outside(t, "throughput")]
    memory_out = [f"{t['engine']} (trial {i + 1})" for i, t in later.items() if outside(t, "memory")]
    medians = [statistics.median(t["throughput"]) for t in later.values()]
    memory = [r for t in later.values() for r in t["memory"]]
    verdict = "within" if not throughput_out and not memory_out else "not all within"
    text = (
        f"Over {count(rounds)} round{'s' if rounds > 1 else ''}, the group's later trials are {verdict} 2% of a "
        f"fresh process: throughput {span(medians, '.3f')}x a fresh process's"
        + (" (medians)" if rounds > 1 else "")
        + (
            "; outside 2%: "
            + ", ".join(
                f"{later[i]['engine']} (trial {i + 1}, {statistics.median(later[i]['throughput']):.3f}x)"
                for i in throughput_out
            )  # fmt: skip
            if throughput_out
            else ""
        )
        + ". Peak memory: "
        + (f"outside 2% for {', '.join(memory_out)}." if memory_out else f"shared / fresh {span(memory, '.3f')}.")
    )
    if throughput_out and rounds < 3:
        few = f"{count(rounds).capitalize()} round{'s are' if rounds > 1 else ' is'} too few"
        text += f" {few} to establish these differences."
    elif throughput_out:
        text += " " + outside_rounds(trials, throughput_out)
    return text


def outside_rounds(trials: dict[int, dict], indices: list[int]) -> str:
    """For the trials whose median ratio is outside 2%: on which side of 1 their rounds fell, and how much a fresh
    process of their engine varies from round to round on the same host."""
    sides = []
    for i in indices:
        ratios = trials[i]["throughput"]
        above = sum(r > 1 for r in ratios)
        sides.append(
            f"{trials[i]['engine']} (trial {i + 1}) {span(ratios, '.3f')}x, above 1 in {above} of {len(ratios)}"
        )
    engines = list(dict.fromkeys(trials[i]["engine"] for i in indices))
    fresh = {t["engine"]: spread(t["fresh"]) for t in trials.values()}
    steady = [e for e, s in fresh.items() if s <= 0.02]
    return (
        f"Round by round: {'; '.join(sides)}. A fresh process of {spoken(engines)} alone varies from round to round "
        f"by {spoken([f'{fresh[e]:.0%}' for e in engines])} of its median throughput"
        + (f", against at most {max(fresh[e] for e in steady):.1%} for {spoken(steady)}" if steady else "")
        + "."
    )


for _figure, _name in ROUNDS.items():
    figure(_figure)(lambda name=_name: rounds_table(name))
    figure(f"{_figure}-says")(lambda name=_name: rounds_says(name))


@figure("h100-later-rounds-3-hosts")
def h100_later_rounds_3_hosts() -> str:
    """The two hosts' img/s per engine (every shared and fresh trial of each), and the full collections timed."""
    here, there = (summary("h100-engines-1gpu", name) for name in ROUNDS.values())

    def rates(rows: list[dict], engine: str) -> str:
        return span([r["img_s"] for r in rows if engine_name(r) == engine], ".0f")

    engines = list(dict.fromkeys(engine_name(r) for r in here))
    collected: dict[str, list[dict]] = {}
    for r in here:
        if r["gc_full"]:
            collected.setdefault(engine_name(r), []).append(r)
    trials_of = {e: sum(engine_name(r) == e for r in here) for e in collected}
    others = len(here) - sum(trials_of.values())
    timed = [
        f"{len(rows)} of the {trials_of[e]} {e} trials ({span([r['gc_s'] for r in rows], '.2f')} s each)"
        for e, rows in collected.items()
    ]
    return (
        "; ".join(f"{e} {rates(here, e)} img/s here against {rates(there, e)} there" for e in engines)
        + f". A full collection fell into the timed steps of {spoken(timed)}"
        + f" and into none of the other {count(others)} trials"
    )
