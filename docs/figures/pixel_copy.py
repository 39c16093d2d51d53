"""The pixel copy: loader workers on 2 cores and an H200, then the rank's own reader threads
(docs/results/cpu-pixel-copy, h200-pixel-copy, h200-pixel-reader)."""

from __future__ import annotations

import csv
import statistics

from . import RESULTS, figure, listed, records, span, table
from .common import short_wait
from .jpeg_decode import prefetch_gpu_before
from .shared_workers import shared_modes


def loader_rates() -> dict[str, dict[str, float]]:
    return {record.removeprefix("path "): run for record, run in records("cpu-pixel-copy", "loader_rates").items()}


@figure("cpu-loader-rates-paths")
def cpu_loader_rates_paths() -> str:
    labels = {
        "jpeg bytes (gpu decode)": "JPEG bytes of the 256-px copy (nvJPEG path)",
        "decode + crop to 224 (cpu)": "decode + RandomResizedCrop to 224 (CPU path)",
        "pixel copy (prepare=pixels)": "pixel copy batches (`prepare=pixels`)",
    }
    rates = loader_rates()
    body = [[label, *rate_cells(rates[path])] for path, label in labels.items()]
    return table(["path", "median img/s", "range"], body, "lrr")


def rate_cells(rate: dict[str, float]) -> list[str]:
    return [f"{rate['median img/s']:,.0f}", f"{rate['range low']:,.0f}-{rate['range high']:,.0f}"]


def pixel_copy_runs() -> tuple[dict[str, dict[str, float]], dict[str, list[float]]]:
    """h200-pixel-copy's bench lines by label, and each path's pipeline-alone rates: the bench's, then 3 rounds."""
    bench = records("h200-pixel-copy", "bench")
    rounds = records("h200-pixel-copy", "rounds")
    paths = {
        "pixels": [bench["input pipeline alone, pixel copy (no decode)"]["img/s"]],
        "gpu": [bench["input pipeline alone, decode gpu"]["img/s"]],
    }
    for record, run in rounds.items():
        if record.startswith("round "):
            paths[record.split()[2]].append(run["images_per_s"])
    return bench, paths


@figure("h200-pixel-copy-steps")
def h200_pixel_copy_steps() -> str:
    bench, paths = pixel_copy_runs()
    built = records("h200-pixel-copy", "rounds")
    plain = bench["batch 256 compile False"]
    cifar, stack = bench["CIFAR files through the full stack"], bench["full stack"]

    def alone(path: str) -> float:
        return bench[f"input pipeline alone, {path}"]["img/s"]

    def rounds(path: str) -> str:
        return ", ".join(f"{v:,.0f}" for v in paths[path][1:])

    return (
        f"2. Both copies built, timed: the pixel copy {built['line (line 1)']['pixel copy built in']:.1f} s, the "
        f"256-px JPEG copy {built['line (line 2)']['JPEG copy built in']:.1f} s (their sizes on disk are not kept).\n"
        "3. `python -m raysweep.bench --batches 256 --image-folder /tmp/jpeg --prepared --pixels --loader-workers 14 "
        "--no-floor --pipeline-seconds 10`\n"
        f"   (`bench.log`): plain PyTorch {plain['plain img/s']:,.0f} img/s, full stack on synthetic data "
        f"{plain['stack img/s']:,.0f}\n   ({plain['ratio']:.3f}x), on CIFAR files {cifar['img/s']:,.0f}, on the pixel "
        f"copy **{stack['img/s']:,.0f} = {stack['ratio']:.3f}x synthetic, data wait "
        f"{stack['data_wait_fraction']:.4f}**;"
        f"\n   pipelines alone: CPU decode {alone('decode cpu'):,.0f}, nvJPEG {alone('decode gpu'):,.0f}, pixel copy "
        f"{alone('pixel copy (no decode)'):,.0f} img/s.\n"
        f"4. Three alternated rounds of 8 s each of the pipeline alone (`rounds.log`): pixel copy {rounds('pixels')};"
        f"\n   nvJPEG on the JPEG copy {rounds('gpu')} img/s.\n\n"
        f"Median of the four measurements of each (bench + rounds): pixel copy "
        f"{statistics.median(paths['pixels']):,.0f} img/s ({span(paths['pixels'], ',.0f')}),\nnvJPEG "
        f"{statistics.median(paths['gpu']):,.0f} ({span(paths['gpu'], ',.0f')}): the same within the spread, "
        f"{statistics.median(paths['pixels']) / plain['stack img/s']:.1f}x the model's {plain['stack img/s']:,.0f} "
        "img/s."
    )


@figure("h200-pixel-copy-setups")
def h200_pixel_copy_setups() -> str:
    with open(RESULTS / "h200-pixel-copy" / "summary.csv", newline="") as f:
        setups_s = [float(r["value"]) for r in csv.DictReader(f) if r["quantity"] == "median_setup_s"]
    return f"{', '.join(format(v, '.1f') for v in setups_s[:-1])} and {setups_s[-1]:.1f} s"


def reader_stages(experiment: str = "h200-pixel-reader") -> dict[str, list[float]]:
    """stages.py's rounds per stage, from the JSON line it ends with: stage -> img/s of each round."""
    (last,) = [
        run
        for run in records(experiment, "reader_stages" if experiment == "cpu-pixel-copy" else "stages").values()
        if any("[" in q for q in run)
    ]
    stages: dict[str, list[float]] = {}
    for quantity, value in last.items():
        stages.setdefault(quantity.split("[")[0], []).append(value)
    return stages


def rate_range(values: list[float]) -> list[str]:
    return [f"{statistics.median(values):,.0f}", f"{min(values):,.0f}-{max(values):,.0f}"]


@figure("h200-pixel-reader-stages")
def h200_pixel_reader_stages() -> str:
    labels = {
        "worker processes": (
            "14 loader processes ship each batch, pinned by the DataLoader (the reader before this change)"
        ),
        "threads 1": "`read_batches`, 1 thread",
        "threads 2": "`read_batches`, 2 threads (`PIXEL_READERS`)",
        "threads 4": "`read_batches`, 4 threads",
        "2 threads + copy to GPU": "2 threads + copy to the GPU",
        "crop on GPU": "the batched crop + normalise alone, on a resident batch",
    }
    stages = reader_stages()
    return table(
        ["stage (one rank)", "median img/s", "range"],
        [[label, *rate_range(stages[k])] for k, label in labels.items()],
        "lrr",
    )


def first_try_crop() -> float:
    return records("h200-pixel-reader", "first-try")["crop on GPU"]["median"]


@figure("h200-pixel-reader-stages-short")
def h200_pixel_reader_stages_short() -> str:
    stages = reader_stages()
    threads = " / ".join(f"{statistics.median(stages[f'threads {n}']):,.0f}" for n in (1, 2, 4))
    body = [
        ["14 loader processes (before)", *rate_range(stages["worker processes"])],
        ["`read_batches`, 1 / 2 / 4 threads", threads, ""],
        ["2 threads + copy to the GPU", *rate_range(stages["2 threads + copy to GPU"])],
        [
            f"batched crop + normalise alone (after; {first_try_crop():,.0f} in the first try)",
            *rate_range(stages["crop on GPU"]),
        ],
    ]
    return table(["stage (one rank, 50,500 images of 341x256 in the page cache)", "median img/s", "range"], body, "lrr")


@figure("h200-pixel-reader-first-crop")
def h200_pixel_reader_first_crop() -> str:
    return f"{first_try_crop():,.0f} img/s"


def pixel_reader_pipeline() -> tuple[dict[str, dict[str, float]], list[float], float]:
    """The bench's lines, the pipeline alone on the pixel copy (the bench's, then 3 rounds), the model's rate."""
    bench = records("h200-pixel-reader", "bench")
    rounds = [run["images_per_s"] for run in records("h200-pixel-reader", "rounds").values()]
    rates = [bench["input pipeline alone, pixel copy (no decode)"]["img/s"], *rounds]
    return bench, rates, bench["batch 256 compile False"]["stack img/s"]


@figure("h200-pixel-reader-pipeline")
def h200_pixel_reader_pipeline() -> str:
    bench, rates, model = pixel_reader_pipeline()
    gpu = bench["input pipeline alone, decode gpu"]["img/s"]
    earlier = records("h200-pixel-reader", "first-try")["input pipeline alone, decode gpu"]["img/s"]
    cpu = bench["input pipeline alone, decode cpu"]["img/s"]
    stack = bench["full stack"]
    body = [
        [
            "pipeline alone, pixel copy: median of 4 (bench + 3 rounds)",
            f"**{statistics.median(rates):,.0f}** ({min(rates):,.0f}-{max(rates):,.0f})",
            f"**{statistics.median(rates) / model:.1f}x** (lowest {min(rates) / model:.1f}x)",
        ],
        [
            f"pipeline alone, nvJPEG on the JPEG copy (bench, one run; {earlier:,.0f} an hour before)",
            f"{gpu:,.0f}",
            f"{gpu / model:.1f}x",
        ],
        ["pipeline alone, CPU decode of the JPEG copy (bench, one run)", f"{cpu:,.0f}", f"{cpu / model:.1f}x"],
        [
            "full stack, pixel copy (a sweep in the bench)",
            f"{stack['img/s']:,.0f}",
            f"**{stack['ratio']:.3f}x**, data wait **{stack['data_wait_fraction']:.4f}**",
        ],
    ]
    return table(["", "img/s", f"over the model ({model:,.0f} img/s, same run)"], body, "lrr")


@figure("h200-pixel-reader-whole")
def h200_pixel_reader_whole() -> str:
    bench, rates, model = pixel_reader_pipeline()
    stack = bench["full stack"]
    median = statistics.median(rates)
    return (
        f"(the bench's {rates[0]:,.0f} and the rounds' {listed(rates[1:], ',.0f')}): **{median:,.0f} img/s\n"
        f"({min(rates):,.0f}-{max(rates):,.0f}), {median / model:.1f}x** the model's {model:,.0f} img/s on "
        f"synthetic data in the same run; the lowest of the four\nis {min(rates) / model:.1f}x. Target 8x (21,600): "
        f"**met**. Full stack on the pixel copy: **{stack['img/s']:,.0f} img/s = {stack['ratio']:.3f}x synthetic,\n"
        f"data wait {stack['data_wait_fraction']:.4f}**"
    )


@figure("h200-nvjpeg-gain")
def h200_nvjpeg_gain() -> str:
    bench, _, _ = pixel_reader_pipeline()
    earlier = records("h200-pixel-reader", "first-try")["input pipeline alone, decode gpu"]["img/s"]
    return f"{earlier:,.0f} to {bench['input pipeline alone, decode gpu']['img/s']:,.0f} img/s"


@figure("h200-pixel-reader-first-try")
def h200_pixel_reader_first_try() -> str:
    first = records("h200-pixel-reader", "first-try")
    whole = [run["images_per_s"] for run in first.values() if "images_per_s" in run]
    return (
        f"Host read alone {first['threads']['median']:,.0f} img/s; whole pipeline {span(whole, ',.0f')} img/s; "
        f"the full stack fell to **{first['full stack']['ratio']:.3f}x**\nsynthetic with data wait "
        f"{first['full stack']['data_wait_fraction']:.4f}"
    )


@figure("cpu-reader-stages")
def cpu_reader_stages() -> str:
    stages = reader_stages("cpu-pixel-copy")
    return (
        f"{statistics.median(stages['worker processes']):,.0f} img/s from 2 loader processes, "
        f"{statistics.median(stages['threads 2']):,.0f} from 2 threads"
    )


@figure("cpu-reader-stages-all")
def cpu_reader_stages_all() -> str:
    stages = reader_stages("cpu-pixel-copy")

    def at(name: str) -> str:
        return f"{statistics.median(stages[name]):,.0f}"

    def ranged(name: str, unit: str = "") -> str:
        return f"{at(name)}{unit} ({min(stages[name]):,.0f}-{max(stages[name]):,.0f})"

    return (
        f"2 loader processes {ranged('worker processes', ' img/s')}, `read_batches` with 1 thread {at('threads 1')}, "
        f'with 2 threads\n{ranged("threads 2")}. Its "crop on GPU" row ran on the CPU here ({at("crop on GPU")} img/s)'
    )


# the sweeps of h200-pixel-reader's sweeps.sh, in start order: the pixel-copy sweep, then the JPEG copy's
PIXEL_SWEEP_TRIALS = [
    ("synthetic", "synthetic (first trial)"),
    ("imagefolder", "imagefolder, pixel copy"),
    ("synthetic", "synthetic, decode=gpu (first trial)"),
    ("synthetic", "synthetic, decode=cpu"),
    ("imagefolder", "imagefolder, JPEG copy, nvJPEG"),
    ("imagefolder", "imagefolder, JPEG copy, CPU decode (14 workers)"),
]


def pixel_reader_sweeps() -> list[tuple[str, dict[str, float], float | None]]:
    """Each trial's label, figures and throughput over its sweep's (later) synthetic trial."""
    runs = list(records("h200-pixel-reader", "sweeps/trials").items())
    assert [record.split()[-1] for record, _ in runs] == [dataset for dataset, _ in PIXEL_SWEEP_TRIALS], runs
    # each JPEG trial against its sweep's synthetic trial of the same decode value
    synthetic = {0: runs[0][1], 1: runs[0][1], 2: runs[2][1], 3: runs[3][1], 4: runs[2][1], 5: runs[3][1]}
    return [
        (label, run, run["throughput"] / synthetic[i]["throughput"] if dataset == "imagefolder" else None)
        for i, ((dataset, label), (_, run)) in enumerate(zip(PIXEL_SWEEP_TRIALS, runs))
    ]


@figure("h200-pixel-reader-sweeps")
def h200_pixel_reader_sweeps() -> str:
    body = []
    for i, (label, run, over) in enumerate(pixel_reader_sweeps()):
        setup = f"{run['setup_s']:.1f}" if run["setup_s"] > 10 else f"{run['setup_s']:.2f}"
        body.append(
            [
                label,
                f"{run['throughput']:,.0f}",
                f"**{over:.3f}x**" if over else "",
                short_wait(run["data_wait_fraction"]),
                f"**{setup}**" if i == 1 else setup,
            ]
        )
    header = ["trial (in start order)", "samples/s", "over synthetic (same sweep)", "data wait", "`setup_s`"]
    return table(header, body, "lrrrr")


@figure("h200-pixel-reader-sweeps-line")
def h200_pixel_reader_sweeps_line() -> str:
    trials = pixel_reader_sweeps()
    _, pixels, pixels_over = trials[1]
    _, later, _ = trials[3]
    _, gpu, gpu_over = trials[4]
    _, cpu, cpu_over = trials[5]
    return (
        f"pixel copy **{pixels_over:.3f}x**, data wait {pixels['data_wait_fraction']:.5f}, later-trial setup "
        f"**{pixels['setup_s']:.2f} s**\n  (a later synthetic trial: {later['setup_s']:.2f} s; target at most 3 s "
        f"over: met); the JPEG copy with nvJPEG {gpu_over:.3f}x, data\n  wait {short_wait(gpu['data_wait_fraction'])} "
        f"({prefetch_gpu_before()} before the one-gather crop), with CPU decode {cpu_over:.3f}x, data wait "
        f"{short_wait(cpu['data_wait_fraction'])},\n  setup {gpu['setup_s']:.2f} and {cpu['setup_s']:.2f} s"
    )


@figure("data-decoders-level")
def data_decoders_level() -> str:
    bench, _, _ = pixel_reader_pipeline()
    trials = pixel_reader_sweeps()
    _, gpu, gpu_over = trials[4]
    _, cpu, cpu_over = trials[5]
    return (
        f"{bench['input pipeline alone, decode gpu']['img/s']:,.0f} img/s and the two decoders are level through the "
        f"full stack: {gpu_over:.3f}x (data wait {short_wait(gpu['data_wait_fraction'])}) and\n  {cpu_over:.3f}x "
        f"({short_wait(cpu['data_wait_fraction'])})"
    )


@figure("data-pixel-copy-measured")
def data_pixel_copy_measured() -> str:
    rates = loader_rates()
    pixels = rates["pixel copy (prepare=pixels)"]
    stages = reader_stages("cpu-pixel-copy")
    bench, pipeline, model = pixel_reader_pipeline()
    stack = bench["full stack"]
    built = records("h200-pixel-copy", "rounds")["line (line 1)"]["pixel copy built in"]
    _, nvjpeg_era = pixel_copy_runs()
    return (
        f"one loader worker ships {pixels['median img/s']:,.0f} img/s\n  of the pixel copy (range "
        f"{pixels['range low']:,.0f}-{pixels['range high']:,.0f} over 3 rounds) against "
        f"{rates['jpeg bytes (gpu decode)']['median img/s']:,.0f} of JPEG bytes and "
        f"{rates['decode + crop to 224 (cpu)']['median img/s']:,.0f} decoded and cropped,\n  alternated in one run; 2 "
        f"reader threads read {statistics.median(stages['threads 2']):,.0f} img/s where 2 loader processes ship "
        f"{statistics.median(stages['worker processes']):,.0f}\n  (`reader_stages.log`). On an H200 "
        f"(`docs/results/h200-pixel-reader/`, 50,500 images of 500x375, micro\n  batch 256): built in {built:.1f} s; "
        f"the pipeline alone **{statistics.median(pipeline):,.0f} img/s** ({span(pipeline, ',.0f')}, median of "
        f"{len(pipeline)}),\n  {statistics.median(pipeline) / model:.1f}x the model; the full stack on it "
        f"{stack['ratio']:.3f}x synthetic, data wait {stack['data_wait_fraction']:.4f}. Read by 14 loader processes\n"
        f"  instead, the pipeline had stopped at {statistics.median(nvjpeg_era['pixels']):,.0f} img/s"
    )


@figure("h200-pixel-reader-notes")
def h200_pixel_reader_notes() -> str:
    trials = pixel_reader_sweeps()
    _, pixels, _ = trials[1]
    _, later, _ = trials[3]
    jpegs = [trials[4][1], trials[5][1]]
    firsts = [trials[0][1]["setup_s"], trials[2][1]["setup_s"]]
    before = [rows[0]["setup_s"] for rows in shared_modes("h200-shared-workers")[0].values()]
    jpeg_over = [j["setup_s"] - later["setup_s"] for j in jpegs]

    def first_batch(run: dict[str, float]) -> float:
        return run["setup_breakdown.first_step"] - run["setup_breakdown.engine_ready"]

    return (
        f"- Later-trial setup over a later synthetic trial's {later['setup_s']:.2f} s: pixel copy "
        f"+{pixels['setup_s'] - later['setup_s']:.1f} s, JPEG copy +{span(jpeg_over, '.1f')} s "
        "(target at\n  most 3 s over: met). Reading the pixel copy starts no loader processes: its first batch came "
        f"{first_batch(pixels):.2f} s\n  after the engine (`first_step` - `engine_ready`), the JPEG copy's "
        f"{span([first_batch(j) for j in jpegs], '.1f')} s.\n"
        f"- nvJPEG through the full stack, {prefetch_gpu_before().replace(' and ', ' with data wait ')} before the "
        "one-gather crop\n  (`docs/results/h200-jpeg-prefetch/`), is now level with CPU decode (single trials): "
        "`decode=auto` is unchanged.\n"
        f"- The first trials' {' and '.join(format(f, '.1f') for f in firsts)} s are issue 13's cold start "
        f"({span(before, '.1f')} s on 2026-12-03's hosts); the\n  cold-process floor was not measured in this run."
    )
