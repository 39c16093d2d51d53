"""``python -m raysweep.bench``: the full stack against hand-written PyTorch, and the input pipeline against the model.

In one run, on the same device, model, batch, precision and optimizer:

1. plain PyTorch (timm's benchmark recipe: warm up, synchronise, repeat, report img/s);
2. the full stack, Ray Tune -> Ray Train -> DeepSpeed, as a real sweep over the same batches,
   reading throughput and per-trial overhead (setup, teardown) back from its ``trials`` table;
3. the input pipeline alone (real CIFAR-format files, uint8 on the device, resized there) and
   a full-stack trial on those files against synthetic data;
4. the cold-process floor (``raysweep.bench.floor``: one fresh process imports torch, timm, DeepSpeed
   and Ray Train, builds the model and engine and takes a step; the second of two, the first warming the
   disk's and the bytecode cache as a sweep's own processes do), against the sweep's ``setup_s``
   (its first trial, and the median of the later ones), and the sweep's duty cycle (``sweep.json``);
5. with ``--image-folder DIR``: the JPEG folder's input pipeline alone (CPU decode, and GPU decode where
   there is a GPU) as images/s and as a multiple of the model's rate, and a full-stack trial on the
   folder against synthetic data at the same batch.

It prints the ratio table and writes ``bench.json`` and ``bench.md`` (both with the command) to ``--out``.
``--quick`` is the CPU form (a small ViT at 32 px) that CI runs.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from raysweep.bench.floor import cold_floor
from raysweep.core.command import ArgumentParser, exit_process, run_command
from raysweep.core.errors import UsageError
from raysweep.core.names import unknown_name
from raysweep.results.text_table import format_table
from raysweep.runtime.caches.compile_cache import compile_cache_env
from trainers.measure.timing import synchronize


def device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


# Hand-written PyTorch as a performance engineer would try it: eager, then torch.compile's modes
# (reduce-overhead adds CUDA graphs; max-autotune-no-cudagraphs searches kernels and keeps eager launches).
PLAIN_VARIANTS = ("eager", "default", "reduce-overhead", "max-autotune-no-cudagraphs")
# the bench's full-stack sweep: its name keys its compiler caches (``compile_cache_env``)
STACK = "stack"


def plain_training_step(model_name: str, batch: int, variant: str = "eager") -> Callable[[], None]:
    """One hand-written training step of the model on synthetic inputs (bf16 autocast, fused AdamW and
    clipping on GPUs), compiled in ``variant``'s torch.compile mode unless eager; each call takes a step."""
    from trainers.engines.deepspeed_config import GRAD_CLIP_NORM
    from trainers.model.models import create_model, native_image_size

    dev = device()
    if dev.type == "cpu":
        torch.set_num_threads(1)  # as a trial's rank, which holds one CPU (cpus_per_worker)
    torch._dynamo.reset()  # every variant compiles from scratch, as a fresh process would
    size = native_image_size(model_name)
    model = create_model(model_name, num_classes=10).to(dev)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=dev.type == "cuda")
    forward = model if variant == "eager" else torch.compile(model, mode=None if variant == "default" else variant)
    x = torch.randn(batch, 3, size, size, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)

    def step() -> None:
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
            loss = F.cross_entropy(forward(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP_NORM, foreach=True)  # as the engines do
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def plain_pytorch(
    model_name: str, batch: int, steps: int, warmup: int, variant: str = "eager", repeats: int = 3
) -> dict:
    """Training throughput of ``plain_training_step`` as the median of ``repeats`` timed windows of ``steps``
    steps, with their range, after ``warmup`` steps (where a compiled variant compiles)."""
    dev = device()
    step = plain_training_step(model_name, batch, variant)
    t0 = time.perf_counter()
    for _ in range(warmup):
        step()
    synchronize(dev)
    warmup_s = time.perf_counter() - t0
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        synchronize(dev)
        rates.append(batch * steps / (time.perf_counter() - t0))
    return {"batch": batch, "variant": variant, **spread("plain_img_s", rates), "plain_warmup_s": warmup_s}


def spread(name: str, values: list[float]) -> dict:
    """``name`` (the median), ``name_min``, ``name_max`` and the values themselves."""
    return {
        name: float(np.median(values)),
        f"{name}_min": min(values),
        f"{name}_max": max(values),
        f"{name}_values": list(values),
    }


def best_plain(plain: list[dict]) -> dict[int, dict]:
    """Per batch, the hand-written variant with the highest median throughput."""
    best: dict[int, dict] = {}
    for p in plain:
        if p["batch"] not in best or p["plain_img_s"] > best[p["batch"]]["plain_img_s"]:
            best[p["batch"]] = p
    return best


def stack_compile_mode(plain: list[dict]) -> str:
    """The torch.compile mode the stack is compiled in: the compiled variant best at the most batches."""
    wins = [p["variant"] for p in best_plain(plain).values() if p["variant"] != "eager"]
    return max(PLAIN_VARIANTS[1:], key=wins.count) if wins else "default"


def matmul_ceiling_tflops() -> float | None:
    """The card's measured bf16 matrix ceiling, an 8192^3 matmul (None on CPU)."""
    if not torch.cuda.is_available():
        return None
    dev = torch.device("cuda")
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn_like(a)
    for _ in range(3):
        a @ b
    synchronize(dev)
    t0 = time.perf_counter()
    for _ in range(20):
        a @ b
    synchronize(dev)
    return 2 * 8192**3 * 20 / (time.perf_counter() - t0) / 1e12


def write_cifar10(root: Path, num_train: int) -> Path:
    """Random images in CIFAR-10's own python format (five train batches and a test batch)."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    per = num_train // 5
    for name, n in [*((f"data_batch_{i}", per) for i in range(1, 6)), ("test_batch", max(per // 5, 10))]:
        batch = {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"labels": rng.integers(0, 10, n).tolist()}
        (folder / name).write_bytes(pickle.dumps(batch))
    return root


def input_pipeline_rate(data_dir: Path, batch: int, image_size: int, batches: int) -> float:
    """Samples/s of the data path alone: CIFAR files -> device -> normalise, flip, resize."""
    from trainers.data.batches import Batches
    from trainers.data.datasets import load_dataset

    dev = device()
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    source = Batches(load_dataset("cifar10", str(data_dir)), dev, image_size, dtype, rank=0, world=1, seed=0)
    for _ in source.train(0, batch, 3):
        pass
    synchronize(dev)
    t0 = time.perf_counter()
    for x, _ in source.train(1, batch, batches):
        x.sum()  # the batch is really materialised
    synchronize(dev)
    return batch * batches / (time.perf_counter() - t0)


def full_stack(
    results: Path, name: str, batches: list[int], overrides: dict, epochs: int = 1
) -> tuple[list[dict], dict]:
    """A real sweep through the Python API (batch_grid over ``batches``): its trials rows, one per batch, each
    with its epochs' throughputs (``epoch_img_s``: every epoch is one timed window of the same steps), and
    the ``economy`` the sweep wrote into its ``sweep.json`` (duty cycle, median setup)."""
    from raysweep.api import run_sweep

    overrides = {**overrides, "epochs": epochs, "micro_batch_per_worker": batches}
    result = run_sweep("batch_grid", results_dir=results, name=name, overrides=overrides, dashboard=False, report=False)
    if not result.all_completed:
        raise SystemExit(f"bench: the full-stack sweep {name} had trials that did not complete ({result.path})")
    economy = json.loads((result.path / "sweep.json").read_text())["economy"]
    per_epoch: dict[str, list[float]] = {}
    for row in sorted(result.epochs.to_pylist(), key=lambda r: r["epoch"]):
        if row["throughput"] is not None:
            per_epoch.setdefault(row["trial_id"], []).append(row["throughput"])
    trials = [{**t, "epoch_img_s": per_epoch.get(t["trial_id"], [])} for t in result.trials.to_pylist()]
    return trials, economy


def warm_floor(model_name: str, batch: int) -> dict:
    """The cold-process floor of the host's second such process, with the first one's figure beside it.

    A sweep's own processes (its driver, Tune's, Train's) read the packages from disk and compile them into
    the bytecode cache before its first rank imports them; the floor a trial is held against starts from the
    same caches, so the first process here only warms them.
    """
    first = cold_floor(model_name, batch)
    return {**cold_floor(model_name, batch), "first_process_floor_s": first["floor_s"]}


def setup_against_floor(trials: list[dict], economy: dict, floor: dict) -> dict:
    """The sweep's setup_s beside the cold-process floor: its first trial's, and the later ones' median.

    The first trial's workers start before Tune starts it (as soon as Ray is up), so its ``setup_s`` can
    fall below the floor; its first step counted from the sweep's launch is the fair comparison
    (launch_wall_s - wall_s is when, after launch, the first trial started).
    """
    first = min(trials, key=lambda t: t["started_at"])["setup_s"]
    later = economy["median_later_setup_s"]
    launch_wall = economy.get("launch_wall_s")
    from_launch = None if launch_wall is None else launch_wall - economy["wall_s"] + first
    return {
        "floor_s": floor["floor_s"],
        "first_setup_s": first,
        "median_later_setup_s": later,
        "first_over_floor_s": first - floor["floor_s"],
        "later_over_floor_s": None if later is None else later - floor["floor_s"],
        "first_step_from_launch_s": from_launch,
        "first_from_launch_over_floor_s": None if from_launch is None else from_launch - floor["floor_s"],
    }


def compare(plain: dict, trials: list[dict], eager: dict) -> dict:
    """One row of the ratio table: the best hand-written variant against the full-stack trials at the same batch.

    ``trials`` are the sweep's trials of that batch in the order they started (``batch_grid`` repeats each
    point): the stack's windows are every epoch of every one of them, so a group's first trial and its later
    ones count alike; ``first_img_s`` and ``later_img_s`` keep them apart (each trial's median epoch). The
    setup, warm-up and utilisation columns are the last trial's (a later trial of the group: its compile is
    the one that finds the group's caches); ``first_warmup_s`` is the batch's first trial's (the group's first
    compile of that shape), so that the two warm-ups show what the caches save. Ratios are of medians;
    ``ratio_min``/``ratio_max`` pair the worst with the best window of each.
    """
    last = trials[-1]
    per_trial = [t["epoch_img_s"] or [t["throughput"]] for t in trials]
    stack = spread("stack_img_s", [w for windows in per_trial for w in windows])
    return {
        **plain,
        **stack,
        "compile": last["compiled"],
        "eager_img_s": eager["plain_img_s"],
        "ratio": stack["stack_img_s"] / plain["plain_img_s"],
        "ratio_min": stack["stack_img_s_min"] / plain["plain_img_s_max"],
        "ratio_max": stack["stack_img_s_max"] / plain["plain_img_s_min"],
        "first_img_s": float(np.median(per_trial[0])),
        "later_img_s": [float(np.median(windows)) for windows in per_trial[1:]],
        "setup_s": last["setup_s"],
        "teardown_s": last["teardown_s"],
        "trial_wall_s": last["trial_wall_s"],
        "stack_warmup_s": last["warmup_s"],
        "first_warmup_s": trials[0]["warmup_s"],
        "flops_per_sample": last["flops_per_sample"],
        "peak_flops": last["peak_flops"],
        "mfu": last["mfu"],
    }


def achieved_over(row: dict, tflops: float | None) -> float | None:
    """The row's achieved FLOP/s (stack throughput x FLOPs per sample) over ``tflops``; None where unknown."""
    if not tflops or not row["flops_per_sample"]:
        return None
    return row["stack_img_s"] * row["flops_per_sample"] / (tflops * 1e12)


def utilisation(rows: list[dict], ceiling_tflops: float | None) -> dict:
    """Two figures per row, keyed by batch (``256c`` compiled), each None where its denominator is unknown.

    ``mfu`` is the trial's own ``mfu`` column (throughput x flops_per_sample / (num_workers x the device's
    spec-sheet peak), ``trainers.measure.flops``), the one definition every doc uses; ``matmul_ceiling_share``
    is the same achieved FLOP/s over the card's measured bf16 matmul ceiling instead of its spec peak.
    """
    keys = [str(r["batch"]) + ("c" if r["compile"] else "") for r in rows]
    share = {key: achieved_over(r, ceiling_tflops) for key, r in zip(keys, rows)}
    return {
        "flops_per_sample": rows[0]["flops_per_sample"] if rows else None,
        "peak_flops": rows[0]["peak_flops"] if rows else None,
        "mfu": {key: r["mfu"] for key, r in zip(keys, rows)},
        "matmul_ceiling_tflops": ceiling_tflops,
        "matmul_ceiling_share": share,
    }


def utilisation_lines(figures: dict) -> list[str]:
    flops, peak = figures["flops_per_sample"], figures["peak_flops"]
    if flops is None:
        return ["MFU: no FLOP count for this model"]
    lines = [f"training FLOPs per sample (the trials' flops_per_sample): {flops / 1e9:.1f} GFLOP"]
    if peak is None:
        lines.append("MFU: no spec peak for this device (the trials' peak_flops is NULL)")
    else:
        mfu = ", ".join(f"{k}: {v:.1%}" for k, v in figures["mfu"].items() if v is not None)
        lines.append(f"MFU (the trials' mfu column, over the spec peak of {peak / 1e12:.0f} TFLOP/s): {mfu}")
    if figures["matmul_ceiling_tflops"]:
        share = ", ".join(f"{k}: {v:.1%}" for k, v in figures["matmul_ceiling_share"].items() if v is not None)
        lines.append(
            f"share of the measured bf16 matmul ceiling ({figures['matmul_ceiling_tflops']:.0f} TFLOP/s): {share}"
        )
    return lines


def stack_overrides(model: str, train_samples: int) -> dict:
    """What every full-stack sweep of the bench sets over ``batch_grid``: the model at the resolution the
    plain loop runs it at (batch_grid's own is the embedded default's 8 px)."""
    from trainers.model.models import native_image_size

    return {"model": model, "image_size": native_image_size(model), "train_samples": train_samples, "warmup_steps": 3}


def run(args: argparse.Namespace) -> dict:
    quick = args.quick
    model = args.model or ("vit_micro_patch4_32" if quick else "vit_base_patch16_224")
    batches = [int(b) for b in args.batches.split(",")] if args.batches else ([16, 32] if quick else [64, 128, 256])
    steps = 8 if quick else 30
    big = max(batches)
    tmp = Path(tempfile.mkdtemp(prefix="raysweep-bench-"))
    stack = stack_overrides(model, steps * big)

    variants = args.variants.split(",") if args.variants else PLAIN_VARIANTS if args.compile else PLAIN_VARIANTS[:1]
    unknown = [v for v in variants if v not in PLAIN_VARIANTS]
    if unknown:
        raise UsageError(f"--variants: {unknown_name('variant', unknown[0], PLAIN_VARIANTS)}")

    # first, while nothing else holds the device or the CPUs
    floor = None if args.no_floor else warm_floor(model, big)
    if args.compile:
        # the hand-written variants compile into the stack sweep's own compiler caches, so the stack finds
        # max-autotune's choices for the matrix shapes already tuned here (cached by shape) rather than
        # tuning them again: minutes less per batch, and no change to what either one runs
        os.environ.update(compile_cache_env(STACK))
    plain = []
    for b in batches:
        for v in variants:
            p = plain_pytorch(model, b, steps, 3, v, args.repeats)
            plain.append(p)
            # a compiled variant's warm-up can take minutes: say where the bench is, and what it measured
            # so far (a run cut short keeps these lines), as each variant ends
            print(
                f"bench: hand-written {v} at micro batch {b}: {p['plain_img_s']:.1f} img/s "
                f"({p['plain_img_s_min']:.1f}-{p['plain_img_s_max']:.1f}), warm-up {p['plain_warmup_s']:.1f} s",
                file=sys.stderr,
                flush=True,
            )
    if torch.cuda.is_available():
        torch.cuda.empty_cache()  # the trials below run in other processes on the same device
    eager = {p["batch"]: p for p in plain if p["variant"] == "eager"}
    synthetic = {**stack, "dataset": "synthetic", "max_steps_per_epoch": steps}
    # --compile: the stack compiled too, in the hand-written variants' winning mode, held against the best
    # variant; its trials share the group's compiles
    compiling = {"compile": True, "compile_mode": stack_compile_mode(plain)} if args.compile else {}
    trials, economy = full_stack(tmp, STACK, batches, {**synthetic, **compiling}, epochs=args.repeats)
    by_batch: dict[int, list[dict]] = {}
    for t in sorted(trials, key=lambda t: t["started_at"]):
        by_batch.setdefault(t["micro_batch_per_worker"], []).append(t)
    rows = [
        {**compare(p, by_batch[b], eager[b]), "compile_mode": compiling.get("compile_mode")}
        for b, p in sorted(best_plain(plain).items())
    ]

    synthetic_trial = by_batch[big][-1]
    pipeline = None if args.no_pipeline else cifar_pipeline(tmp, quick, big, stack, synthetic, synthetic_trial)
    folder = None
    if args.image_folder:
        folder = image_folder_figures(args, tmp, model, big, synthetic, synthetic_trial["throughput"])
    return {
        "date": time.strftime("%Y-%m-%d"),
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "model": model,
        "command": args.command,
        "argv": sys.argv,
        "plain": plain,
        "rows": rows,
        "input_pipeline": pipeline,
        "cold_floor": floor,
        "setup_against_floor": None if floor is None else setup_against_floor(trials, economy, floor),
        "economy": economy,
        "image_folder": folder,
        "utilisation": utilisation(rows, matmul_ceiling_tflops()),
    }


def cifar_pipeline(tmp: Path, quick: bool, batch: int, stack: dict, synthetic: dict, synthetic_trial: dict) -> dict:
    """The input pipeline alone on CIFAR-format files, and a full-stack trial on them against synthetic data."""
    cifar = write_cifar10(tmp / "cifar", 5_000 if quick else 50_000)
    pipeline = input_pipeline_rate(cifar, batch, stack["image_size"], batches=20)
    real = full_stack(tmp, "cifar", [batch], {**synthetic, "dataset": "cifar10", "data_dir": str(cifar)})[0][0]
    return {
        "batch": batch,
        "pipeline_img_s": pipeline,
        "model_img_s": synthetic_trial["throughput"],
        "cifar_img_s": real["throughput"],
        "cifar_over_synthetic": real["throughput"] / synthetic_trial["throughput"],
        "data_wait_fraction": real["data_wait_fraction"],
    }


def image_folder_figures(
    args: argparse.Namespace, tmp: Path, model: str, batch: int, synthetic: dict, model_img_s: float
) -> dict:
    """The folder's input pipeline alone per decoder, and a full-stack trial on it against synthetic data."""
    from raysweep.bench.input_pipeline import measure_input_pipeline
    from trainers.data.imagefolder import index_imagefolder
    from trainers.data.pixel_copy import pixel_copy
    from trainers.data.prepared import prepare_imagefolder
    from trainers.model.models import native_image_size

    gpu = torch.cuda.is_available()
    workers = args.loader_workers or (max(1, min(8, (os.cpu_count() or 2) - 2)) if gpu else 1)
    builders = max(1, (os.cpu_count() or 2) - 1)
    size = native_image_size(model)
    data_dir, build_s, pixels_build_s = args.image_folder, None, None
    if args.prepared:  # measure the 256-px copy the trials read with prepare=auto, built here first
        started = time.perf_counter()
        data_dir = prepare_imagefolder(args.image_folder, workers=builders)
        build_s = time.perf_counter() - started
    if args.pixels:  # and the pixel copy trials read with prepare=pixels, built here first
        started = time.perf_counter()
        pixel_copy(args.image_folder, index_imagefolder(args.image_folder), size, 3, builders)
        pixels_build_s = time.perf_counter() - started
    seconds = args.pipeline_seconds or (3.0 if args.quick else 20.0)
    pipelines = {}
    for decode in ("cpu", "gpu") if gpu else ("cpu",):
        measured = measure_input_pipeline(data_dir, size, batch, decode, workers, seconds)
        pipelines[decode] = {**measured, "over_model": measured["images_per_s"] / model_img_s}
    if args.pixels:
        measured = measure_input_pipeline(args.image_folder, size, batch, "auto", workers, seconds, pixels=True)
        pipelines["pixels"] = {**measured, "over_model": measured["images_per_s"] / model_img_s}
    # a GPU rank's extra CPUs feed its loader; a CPU rank's would also change its compute
    loading = {"loader_workers": workers, **({"cpus_per_worker": workers + 1} if gpu else {})}
    # the pixel copy is found from its source folder; the JPEG copy (or the source) is read as it is
    read = (
        {"data_dir": args.image_folder, "prepare": "pixels"}
        if args.pixels
        else {"data_dir": data_dir, "prepare": "off"}
    )
    overrides = {**synthetic, "dataset": "imagefolder", **read, **loading}
    trial = full_stack(tmp, "folder", [batch], overrides)[0][0]
    return {
        "folder": args.image_folder,
        "read": f"{args.image_folder} (its pixel copy)" if args.pixels else data_dir,
        "prepared_build_s": build_s,
        "pixels_build_s": pixels_build_s,
        "batch": batch,
        "image_size": size,
        "loader_workers": workers,
        "pipeline": pipelines,
        "model_img_s": model_img_s,
        "stack_img_s": trial["throughput"],
        "stack_over_synthetic": trial["throughput"] / model_img_s,
        "data_wait_fraction": trial["data_wait_fraction"],
        "setup_s": trial["setup_s"],
    }


def report(result: dict) -> str:
    header = ["batch", "best hand-written", "img/s", "eager img/s", "stack", "stack img/s", "ratio"]
    header += ["first trial / later img/s", "setup s", "teardown s", "warm-up s, first / last trial"]
    body = [
        [
            str(r["batch"]),
            r["variant"],
            ranged(r, "plain_img_s"),
            f"{r['eager_img_s']:.1f}",
            f"compiled ({r.get('compile_mode') or 'default'})" if r["compile"] else "eager",
            ranged(r, "stack_img_s"),
            f"{r['ratio']:.3f} ({r['ratio_min']:.3f}-{r['ratio_max']:.3f})",
            " / ".join(f"{v:.0f}" for v in [r["first_img_s"], *r["later_img_s"]]),
        ]
        + [f"{r[k]:.1f}" for k in ("setup_s", "teardown_s")]
        + [f"{r['first_warmup_s']:.1f} / {r['stack_warmup_s']:.1f}"]
        for r in result["rows"]
    ]
    lines = [
        f"{result['model']} on {result['device']}, {result['date']}: {result['command']}",
        format_table(header, body),
        f"img/s: median of the timed windows (range): {len(result['rows'][0]['plain_img_s_values'])} a hand-written "
        "variant, every epoch of every trial of the batch for the stack; ratio: stack over the best hand-written "
        "variant's medians (range: worst window over best, best over worst); setup: the batch's last trial (a later "
        "trial of the group); warm-up: the batch's first trial (the group's first compile of its shape) and its last",
        *pipeline_lines(result["input_pipeline"]),
        *folder_lines(result["image_folder"]),
        *floor_lines(result["cold_floor"], result["setup_against_floor"]),
        economy_summary(result["economy"]),
        *utilisation_lines(result["utilisation"]),
    ]
    return "\n".join(lines)


def pipeline_lines(pipe: dict | None) -> list[str]:
    if pipe is None:
        return ["input pipeline: not measured (--no-pipeline)"]
    return [
        f"input pipeline alone: {pipe['pipeline_img_s']:.0f} img/s at batch {pipe['batch']} "
        f"(model: {pipe['model_img_s']:.0f} img/s on synthetic data)",
        f"CIFAR files through the full stack: {pipe['cifar_img_s']:.0f} img/s = "
        f"{pipe['cifar_over_synthetic']:.3f} x synthetic, data_wait_fraction {pipe['data_wait_fraction']:.4f}",
    ]


def ranged(row: dict, name: str) -> str:
    return f"{row[name]:.1f} ({row[name + '_min']:.1f}-{row[name + '_max']:.1f})"


def floor_lines(floor: dict | None, against: dict | None) -> list[str]:
    if floor is None:
        return ["cold-process floor: not measured (--no-floor)"]
    phases = ", ".join(f"{k} {v:.1f}" for k, v in floor["since_launch_s"].items())
    later, over = against["median_later_setup_s"], against["later_over_floor_s"]
    later_text = "no later trial" if later is None else f"later trials' median {later:.1f} s ({over:+.1f})"
    from_launch = against.get("first_step_from_launch_s")
    launch_text = (
        ""
        if from_launch is None
        else f"; the first trial's first step {from_launch:.1f} s after the sweep's launch "
        f"({against['first_from_launch_over_floor_s']:+.1f})"
    )
    return [
        f"cold-process floor (batch {floor['batch']}): {floor['floor_s']:.1f} s to the first step's end "
        f"(the host's first such process, filling the caches: {floor['first_process_floor_s']:.1f} s); "
        f"phases end at s: {phases}",
        f"  measured by: {floor['command']}",
        f"sweep setup_s against it: first trial {against['first_setup_s']:.1f} s "
        f"({against['first_over_floor_s']:+.1f}), {later_text}{launch_text}",
    ]


def economy_summary(economy: dict) -> str:
    duty = economy["duty_cycle"]
    duty_text = "n/a" if duty is None else f"{duty:.3f}"
    from_launch = economy.get("duty_cycle_from_launch")
    launch_text = (
        "" if from_launch is None else f"; {from_launch:.3f} from its launch ({economy['launch_wall_s']:.1f} s)"
    )
    return (
        f"the stack sweep's duty cycle (sweep.json): {duty_text} over {economy['wall_s']:.1f} s "
        f"on {economy['devices']:g} devices{launch_text}"
    )


def folder_lines(folder: dict | None) -> list[str]:
    if folder is None:
        return []
    built = "" if folder["prepared_build_s"] is None else f", prepared copy built in {folder['prepared_build_s']:.1f} s"
    if folder["pixels_build_s"] is not None:
        built += f", pixel copy built in {folder['pixels_build_s']:.1f} s"
    lines = [f"image folder {folder['read']} at {folder['image_size']} px, batch {folder['batch']}, "
             f"{folder['loader_workers']} loader workers{built}:"]  # fmt: skip
    for decode, p in folder["pipeline"].items():
        lines.append(
            f"  input pipeline alone, {'pixel copy (no decode)' if decode == 'pixels' else 'decode ' + decode}: "
            f"{p['images_per_s']:.0f} img/s = "
            f"{p['over_model']:.2f} x the model ({folder['model_img_s']:.0f} img/s)"
        )
    lines.append(
        f"  full stack: {folder['stack_img_s']:.0f} img/s = {folder['stack_over_synthetic']:.3f} x synthetic, "
        f"data_wait_fraction {folder['data_wait_fraction']:.4f}"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    return run_command(bench_command, argv)


def bench_command(argv: list[str] | None) -> int:
    p = ArgumentParser(prog="python -m raysweep.bench", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="the CPU form: small ViT at 32 px, small batches")
    p.add_argument("--model", help="model (default: vit_base_patch16_224, or vit_micro_patch4_32 with --quick)")
    p.add_argument("--batches", help="comma-separated micro batches (default 64,128,256; 16,32 with --quick)")
    p.add_argument(
        "--compile",
        action="store_true",
        help="hand-written variants compiled in every torch.compile mode too, and the stack compiled",
    )
    p.add_argument(
        "--variants",
        help=f"comma-separated hand-written variants among {','.join(PLAIN_VARIANTS)} (default: all with --compile, "
        "else eager; max-autotune-no-cudagraphs tunes its kernels for minutes per micro batch on a GPU)",
    )
    p.add_argument("--repeats", type=int, default=3, help="timed windows per measurement (default: %(default)s)")
    p.add_argument(
        "--no-floor", action="store_true", help="skip the cold-process floor (two fresh processes, 8-30 s each)"
    )
    p.add_argument(
        "--no-pipeline", action="store_true", help="skip the CIFAR-format input pipeline and its full-stack trial"
    )
    p.add_argument("--image-folder", metavar="DIR", help="also measure this train/<class>/, val/<class>/ folder")
    p.add_argument("--prepared", action="store_true", help="with --image-folder: measure its prepared 256-px copy")
    p.add_argument(
        "--pixels", action="store_true", help="with --image-folder: also its pixel copy; the full-stack trial reads it"
    )
    p.add_argument(
        "--loader-workers",
        type=int,
        default=0,
        help="image folder loader processes (0: 8 on GPU, 1 on CPU; a pixel copy on a GPU is read by threads)",
    )
    p.add_argument(
        "--pipeline-seconds", type=float, default=0.0, help="input pipeline timing (0: 20 s, 3 with --quick)"
    )
    p.add_argument("--out", default="bench-results", help="directory for bench.json and bench.md")
    args = p.parse_args(argv)
    args.command = " ".join(["python -m raysweep.bench", *(sys.argv[1:] if argv is None else argv)])
    result = run(args)
    text = report(result)
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(result, indent=2, default=str))
    (out / "bench.md").write_text("```\n" + text + "\n```\n")
    return 0


if __name__ == "__main__":
    exit_process(main())
