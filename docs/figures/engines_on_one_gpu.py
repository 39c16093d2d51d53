"""Every engine on one H100, megatron-core beside ZeRO-1 and DDP, and a shared group's later trials
(docs/results/h100-engines-1gpu, docs/results/h100-megatron)."""

from __future__ import annotations

import statistics

from . import figure, span, summary, table

ENGINE_NAMES = {
    "deepspeed": "DeepSpeed ZeRO-{zero_stage}",
    "ddp": "DDP",
    "accelerate": "Accelerate (DDP)",
    "fsdp": "FSDP2",
    "megatron": "megatron-core",
}


def engine_name(row: dict) -> str:
    """A summary row's engine as the tables name it (its ZeRO stage for DeepSpeed)."""
    return ENGINE_NAMES[row["engine"]].format(zero_stage=int(row["zero_stage"] or 0))


def engine_repeats(experiment: str = "h100-engines-1gpu") -> dict[str, list[dict]]:
    """Each engine's trials of an experiment's sweep in run order (repeat 0, 1, 2), in the space's order."""
    by_engine: dict[str, list[dict]] = {}
    for r in sorted(summary(experiment), key=lambda r: r["started_at"]):
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
    spreads = {name: (max(t) - min(t)) / statistics.median(t) for name, rows in trials.items()
               for t in [[r["throughput"] for r in rows]]}  # fmt: skip
    widest = max(spreads, key=spreads.get)
    memory_same = all(len({r["peak_mem_gib"] for r in rows}) == 1 for rows in trials.values())
    ranked = sorted(trials, key=lambda name: -statistics.median(r["throughput"] for r in trials[name]))
    return (
        f"Accelerate reaches {span(ratios, '.3f')}x DDP's throughput with the same peak memory: its DDP path adds "
        f"nothing measurable on one GPU. A group's later trials run as its first did: every engine's three repeats "
        f"agree within {spreads[widest]:.1%} ({widest}'s, the widest)"
        + (", and each engine's peak memory is the same in every repeat" if memory_same else "")
        + f". By median throughput: {', '.join(ranked)}."
    )


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


def later_rounds() -> dict[tuple[str, int], list[dict]]:
    """summary-later-rounds.csv: (scenario, trial index) -> that trial's row in each round."""
    out: dict[tuple[str, int], list[dict]] = {}
    for r in summary("h100-engines-1gpu", "summary-later-rounds.csv"):
        out.setdefault((r["scenario"], int(r["trial"])), []).append(r)
    return out


@figure("h100-later-rounds")
def h100_later_rounds() -> str:
    """Each engine's trial in a shared group (today's teardown) against a fresh process, round by round."""
    rows = later_rounds()
    body = []
    for (scenario, index), fresh in sorted(rows.items()):
        if scenario != "fresh":
            continue
        shared = rows[("shared-now", index)]
        ratios = [s["img_s"] / f["img_s"] for s, f in zip(shared, fresh)]
        body.append(
            [
                str(index + 1),
                engine_name(fresh[0]),
                " / ".join(f"{r['img_s']:.0f}" for r in shared),
                " / ".join(f"{r['img_s']:.0f}" for r in fresh),
                " / ".join(f"{x:.3f}" for x in ratios),
                " / ".join(f"{s['peak_gib']:.2f} vs {f['peak_gib']:.2f}" for s, f in zip(shared, fresh)),
            ]
        )
    header = ["trial", "engine", "shared group: img/s by round", "fresh process: img/s by round",
              "shared / fresh by round", "peak GiB, shared vs fresh, by round"]  # fmt: skip
    return table(header, body, "rlrrrr")


@figure("h100-later-rounds-says")
def h100_later_rounds_says() -> str:
    rows = later_rounds()
    pairs = {i: list(zip(rows[("shared-now", i)], f)) for (s, i), f in rows.items() if s == "fresh"}
    ratios = {i: [a["img_s"] / b["img_s"] for a, b in p] for i, p in pairs.items()}
    same_peak = all(a["peak_gib"] == b["peak_gib"] for p in pairs.values() for a, b in p)
    slowest = min(min(r) for r in ratios.values())
    faster = [engine_name(pairs[i][0][1]) for i, r in sorted(ratios.items()) if min(r) > 1.02]
    rounds = len(next(iter(ratios.values())))
    return (
        f"Peak memory in the shared group is {'the same as' if same_peak else 'not always that of'} a fresh "
        f"process for every engine. The slowest shared trial runs at {slowest:.3f}x its fresh process's "
        f"throughput; {', '.join(faster) or 'no engine'} ran more than 2% faster in the shared group in every "
        f"round, so a fresh process is not the upper bound. {rounds} rounds are too few to test these differences."
    )
