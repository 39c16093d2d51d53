"""Does a later compiled trial of a worker group reuse the compile, and what does ``compile=auto`` choose?

Three sweeps through the CLI, one trial at a time on one GPU, each a sweep of its own (so each starts with
cold compiler caches, ``raysweep.runtime.caches.compile_cache``):

* ``reuse``: ``compile=true``, three repeats of one shape (ViT-B/16, micro batch 128): the first trial compiles
  cold, the later two run in the same worker group (``worker_group``) after ``torch._dynamo.reset()``, so they
  trace again and find Inductor's FX graph, AOTAutograd and Triton caches of the sweep on disk.  Their
  ``setup_s`` (Tune's start to the first step) and ``warmup_s`` (the untimed first steps: the compile) say
  what is left of the compile; the target is a later compiled trial's setup within 3 s.
* ``auto``: ``compile=false``, ``true``, then ``auto`` of the same shape: the third decides from the figures
  the first two measured (its ``compile_reason`` says ``measured``).
* in one process, outside Ray: three fresh models of the shape compiled one after another: cold, after
  ``torch._dynamo.reset()`` (as a group's next trial), and without the reset (Dynamo's own cache reused).
* ``plan``: ``--dry-run`` of ``compile=auto`` over micro batch 64/128/256 and 51,200 or 1,281,167 samples a
  trial: what the defaults choose for short and ImageNet-long trials.

    . .whl/install.sh && python docs/results/h100-compile-reuse/run.py            # GPU (about 5 minutes)
    python docs/results/h100-compile-reuse/run.py --tiny                          # CPU: the script's own check

It prints one table and writes ``$OUT/summary.csv`` (one row per trial), the sweeps under ``$OUT/sweeps`` and
the CLI's output under ``$OUT/logs``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from raysweep.core.store import read_table  # noqa: E402

GPU_SHAPE = ["--set", "model=vit_base_patch16_224", "--set", "image_size=224", "--set", "micro_batch_per_worker=[128]"]
# CPU: the smallest real model, eager only (Inductor's C++ build on 2 cores would take the test's minutes)
TINY_SHAPE = ["--set", "model=vit_micro_patch4_32", "--set", "image_size=32", "--set", "micro_batch_per_worker=[16]"]
# A sweep's limit, so that the three and the in-process compiles stay within a device call's 10 minutes.
SWEEP_S = 210
COLUMNS = [
    "sweep", "trial", "compile", "compiled", "micro_batch_per_worker", "worker_group", "setup_s", "engine_ready_s",
    "first_step_s", "warmup_s", "throughput", "compile_reason",
]  # fmt: skip


def tune(out: Path, name: str, args: list[str]) -> subprocess.CompletedProcess:
    """``python -m raysweep.tune`` with ``args``; its output kept under ``$OUT/logs``."""
    command = [sys.executable, "-m", "raysweep.tune", "--space", "batch_grid", "--no-dashboard", "--no-report"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    started = time.time()
    try:
        proc = subprocess.run([*command, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=SWEEP_S)
    except subprocess.TimeoutExpired as e:  # what it printed is kept; the tables hold the trials it finished
        proc = subprocess.CompletedProcess(e.cmd, 124, as_text(e.stdout), as_text(e.stderr))
    (out / "logs").mkdir(parents=True, exist_ok=True)
    (out / "logs" / f"{name}.log").write_text(proc.stdout + proc.stderr)
    print(f"{name}: exit {proc.returncode} after {time.time() - started:.0f} s", flush=True)
    if proc.returncode:
        print(proc.stdout[-3000:] + proc.stderr[-3000:], file=sys.stderr)
    return proc


def as_text(output: bytes | str | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def sweep(out: Path, name: str, shape: list[str], common: list[str], sets: list[str], repeats: int) -> list[dict]:
    """One sweep's trial rows in start order, with the setup phases of its rank 0."""
    results = out / "sweeps"
    tune(out, name, [*shape, *common, *sets, "--repeats", str(repeats), "--results-dir", str(results), "--name", name])
    rows = sorted(read_table(results / name / "trials", "trials").to_pylist(), key=lambda r: r["started_at"])
    for i, row in enumerate(rows):
        phases = json.loads(row["setup_breakdown"] or "{}")
        row.update(
            sweep=name, trial=i, engine_ready_s=phases.get("engine_ready"), first_step_s=phases.get("first_step")
        )
    return rows


def compile_three_models(tiny: bool) -> None:
    """What a worker group's process pays for its next trial's compile, outside Ray: three fresh models of one
    shape compiled one after another, as three trials would (cold; after ``torch._dynamo.reset()`` as
    ``trial_server.start_clean`` does, the on-disk caches warm; without the reset, Dynamo's own cache warm)."""
    import torch

    from trainers.model.models import create_model

    os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")
    os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "1")
    name, size, batch = ("vit_micro_patch4_32", 32, 16) if tiny else ("vit_base_patch16_224", 224, 128)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    x = torch.randn(batch, 3, size, size, device=device)
    y = torch.randint(0, 1000, (batch,), device=device)
    print("in one process | first step s | next step s")
    for label, reset in (("cold", True), ("after dynamo reset", True), ("no reset", False)):
        if reset:
            torch._dynamo.reset()
        model = create_model(name, 1000, size, 3).to(device)
        optimizer = torch.optim.AdamW(model.parameters(), fused=device == "cuda")
        step = torch.compile(model)
        times = []
        for _ in range(2):
            started = time.perf_counter()
            with torch.autocast(device, dtype=dtype, enabled=device == "cuda"):
                loss = torch.nn.functional.cross_entropy(step(x).float(), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - started)
        print(f"{label} | {times[0]:.2f} | {times[1]:.3f}", flush=True)


def show(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return "-" if value is None else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="CPU: the smallest model, eager, a few steps")
    parser.add_argument("--in-process", action="store_true", help="only the compile of three models in one process")
    args = parser.parse_args()
    if args.in_process:
        compile_three_models(args.tiny)
        return
    out = Path(os.environ.get("OUT", "/tmp/compile-reuse"))
    out.mkdir(parents=True, exist_ok=True)
    shape = TINY_SHAPE if args.tiny else GPU_SHAPE
    samples = 160 if args.tiny else 6400  # ViT-B/16 at 128: 50 steps, about 2.5 s eager on an H100
    common = [
        "--set", "dataset=synthetic", "--set", f"train_samples={samples}", "--set", "epochs=1",
        "--set", "checkpoint_every=0", "--max-concurrent-trials", "1",
    ]  # fmt: skip
    reuse, auto = ("false", "[false,auto]") if args.tiny else ("true", "[false,true,auto]")
    rows = sweep(out, "reuse", shape, common, ["--set", f"compile={reuse}"], repeats=3)
    rows += sweep(out, "auto", shape, common, ["--set", f"compile={auto}"], repeats=1)

    print(" | ".join(COLUMNS))
    for row in rows:
        print(" | ".join(show(row.get(c)) for c in COLUMNS))
    with open(out / "summary.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)

    in_process = [sys.executable, __file__, "--in-process", *(["--tiny"] if args.tiny else [])]
    env = {**os.environ, "PYTHONPATH": str(REPO), "TORCHINDUCTOR_CACHE_DIR": str(out / "in-process-cache")}
    try:
        print(subprocess.run(in_process, env=env, capture_output=True, text=True, timeout=SWEEP_S).stdout)
    except subprocess.TimeoutExpired as e:
        print(f"in one process: stopped after {SWEEP_S} s\n{as_text(e.stdout)}")

    plan = tune(
        out,
        "plan",
        [
            "--set", "model=vit_base_patch16_224", "--set", "image_size=224", "--set", "dataset=synthetic",
            "--set", "compile=auto", "--set", "micro_batch_per_worker=[64,128,256]",
            "--set", "train_samples=[51200,1281167]", "--set", "epochs=1", "--repeats", "1",
            "--dry-run", "--assume-gpus", "1",
        ],
    )  # fmt: skip
    print(plan.stdout)


if __name__ == "__main__":
    main()
