"""Do a shared worker group's later trials run as fast, and start from as little memory, as its first?

One GPU, ViT-B/16 at micro batch 128, bf16. The same sequence of engine trials (``SEQUENCE``: DeepSpeed
ZeRO 0-3, FSDP2, Accelerate, then ZeRO-0 and FSDP2 again) runs three ways, each in processes of its own:

* ``shared-before``: one process trains the trials one after another and, between them, does what the
  trial server did before trials closed their engines: drop the references, ``start_clean`` (dynamo's
  reset, a full collection, the allocator's cache emptied, the peak reset);
* ``shared-now``: the same, with what a trial's end does now: ``engine.close()`` (``train_trial``) and the
  process state put back (``ProcessState``, the trial server);
* ``fresh``: each engine's trial in a new process (the reference: nothing came before it);
* ``fresh-zero3-linear``: the same for ZeRO-0, FSDP2 and Accelerate, with ``torch.nn.functional.linear``
  replaced by DeepSpeed ZeRO-3's (``zero3_linear_wrap``) before the model is built, as every trial after a
  ZeRO-3 one had it: that replacement's own cost, apart from the memory earlier trials left.

Each process freezes what its imports made before its first trial (``freeze_startup_objects``), as a group's
rank does. Each trial builds its model and engine as ``train_trial`` does (``trainers.engines.build_engine``) in
a one-rank NCCL group, takes ``--warmup`` steps, then times ``--steps`` steps. Prints one row per trial:
throughput, its peak memory (``trainers.measure.hardware.peak_memory_gib``, after the reset at its start), the
memory its tensors still hold after its teardown, whether ``torch.nn.functional.linear`` was DeepSpeed's when it
started, and what the timed steps cost the host: the process's CPU seconds, its minor page faults, and the
garbage collections (of the oldest generation) and seconds spent in them. With ``$OUT`` set the rows are also
written to ``$OUT/later_trials.jsonl``. DDP is left out: its engine needs Ray Train's context.

    . .whl/install.sh && python docs/results/h100-engines-1gpu/later_trials.py [--steps 60] [--compile false]

``--trials 3,4`` keeps those trials of ``SEQUENCE`` (numbered from 0) in every scenario. Without a GPU it runs on
the CPU (gloo, ``DS_ACCELERATOR=cpu``), e.g. ``--model vit_micro_patch4_32 --image-size 32 --batch 8 --precision
fp32 --steps 5 --warmup 1``: the memory columns, not the throughput.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SEQUENCE = (
    {"engine": "deepspeed", "zero_stage": 0},
    {"engine": "deepspeed", "zero_stage": 1},
    {"engine": "deepspeed", "zero_stage": 2},
    {"engine": "deepspeed", "zero_stage": 3},
    {"engine": "fsdp"},
    {"engine": "accelerate"},
    {"engine": "deepspeed", "zero_stage": 0},
    {"engine": "fsdp"},
)
SCENARIOS = ("shared-before", "shared-now", "fresh", "fresh-zero3-linear")
# the trials a fresh process runs: each engine once, and without ZeRO-3 itself where its linear is the question
FRESH_TRIALS = {"fresh": [0, 1, 2, 3, 4, 5], "fresh-zero3-linear": [0, 4, 5]}
GIB = 2**30


def allocated_gib(device) -> float:
    """Memory the process's tensors hold: the allocator's count on a GPU, the live tensors' storages on a CPU."""
    import torch

    from trainers.measure.hardware import live_tensor_bytes

    return (torch.cuda.memory_allocated(device) if device.type == "cuda" else live_tensor_bytes()) / GIB


class HostCost:
    """What a stretch of this process cost the host: CPU seconds, minor page faults, full collections and their
    seconds (``gc.callbacks``, which stay registered for the process)."""

    def __init__(self) -> None:
        self.gc_s = 0.0
        self.gc_full = 0
        self._gc_started = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc_s += time.perf_counter() - self._gc_started
            self.gc_full += info["generation"] == 2

    def start(self) -> None:
        self._at = (time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt, self.gc_s, self.gc_full)

    def stop(self) -> dict:
        cpu, faults, gc_s, gc_full = self._at
        return {
            "cpu_s": round(time.process_time() - cpu, 3),
            "minor_faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults,
            "gc_full": self.gc_full - gc_full,
            "gc_s": round(self.gc_s - gc_s, 4),
        }


def run_trials(scenario: str, indices: list[int], args: argparse.Namespace) -> None:
    """In this process: the trials ``indices`` of ``SEQUENCE``, one after another, one JSON line each."""
    import torch

    gpu = torch.cuda.is_available()
    os.environ.setdefault("DS_ACCELERATOR", "cuda" if gpu else "cpu")
    import torch.distributed as dist
    import torch.nn.functional as F

    from raysweep.core.params import TrialParams
    from raysweep.runtime.cluster import free_port
    from trainers.engines import build_engine
    from trainers.measure.hardware import peak_memory_gib
    from trainers.model.models import create_model
    from trainers.numerics import set_math_modes
    from trainers.process_state import ProcessState
    from trainers.trial_server import freeze_startup_objects, start_clean

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0", WORLD_SIZE="1")
    os.environ.update(LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")
    device = torch.device("cuda", 0) if gpu else torch.device("cpu")
    if gpu:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if gpu else "gloo", rank=0, world_size=1)
    batch, size = args.batch, args.image_size
    linear = torch.nn.functional.linear
    if scenario == "fresh-zero3-linear":
        from deepspeed.runtime.zero.linear import zero3_linear_wrap

        torch.nn.functional.linear = zero3_linear_wrap

    host = HostCost()
    for position, index in enumerate(indices):
        values = SEQUENCE[index]
        if position == 0:
            freeze_startup_objects()
        start_clean(device)
        linear_at_start = "deepspeed" if torch.nn.functional.linear is not linear else "torch"
        process = ProcessState.capture()
        params = TrialParams.from_dict(
            {
                "model": args.model,
                "dataset": "synthetic",
                "micro_batch_per_worker": batch,
                "precision": args.precision,
                "compile": args.compile,
                **values,
            }
        ).resolve(cluster_has_gpus=gpu)
        set_math_modes(params.precision)
        with torch.device(device):
            model = create_model(params.model, num_classes=10, image_size=size)
        engine = build_engine(params, model, device, total_steps=args.warmup + args.steps)
        x = torch.randn(batch, 3, size, size, device=device, dtype=engine.input_dtype)
        y = torch.randint(0, 10, (batch,), device=device)
        engine.train()
        for step in range(args.warmup + args.steps):
            if step == args.warmup:
                torch.cuda.synchronize() if gpu else None
                started = time.perf_counter()
                host.start()
            engine.backward(F.cross_entropy(engine(x).float(), y))
            engine.step()
        torch.cuda.synchronize() if gpu else None
        seconds = time.perf_counter() - started
        cost = host.stop()
        peak = peak_memory_gib(device)
        if scenario != "shared-before":
            engine.close()
            process.restore()
        del engine, model, x, y
        start_clean(device)
        row = {
            "scenario": scenario,
            "trial": index,
            "engine": values["engine"],
            "zero_stage": values.get("zero_stage", ""),
            "img_s": round(args.steps * batch / seconds, 1),
            "peak_gib": round(peak, 2),
            "allocated_after_gib": round(allocated_gib(device), 3),
            "linear_at_start": linear_at_start,
            **cost,
        }
        print("ROW " + json.dumps(row), flush=True)
    dist.destroy_process_group()


def child(scenario: str, indices: list[int], args: argparse.Namespace) -> list[dict]:
    command = [sys.executable, __file__, "--child", scenario, "--trials", ",".join(map(str, indices))]
    for name in ("steps", "warmup", "compile", "model", "image_size", "batch", "precision"):
        command += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    out = os.environ.get("OUT")
    if out:
        with open(Path(out) / f"later_trials-{scenario}.log", "a") as log:
            log.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"{scenario} {indices}: exited {proc.returncode}")
    return [json.loads(line[4:]) for line in proc.stdout.splitlines() if line.startswith("ROW ")]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--compile", choices=["false", "true"], default="false")
    p.add_argument("--model", default="vit_base_patch16_224")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--precision", default="bf16")
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated, of " + ", ".join(SCENARIOS))
    p.add_argument("--rounds", type=int, default=1, help="the scenarios this many times (every other in reverse)")
    p.add_argument(
        "--until-s", type=float, default=float("inf"), help="start no round expected to end after this many seconds"
    )
    p.add_argument("--child", choices=SCENARIOS)
    p.add_argument("--trials", default="", help="comma-separated indices of SEQUENCE to run (default: all)")
    args = p.parse_args(argv)
    if args.child:
        run_trials(args.child, [int(i) for i in args.trials.split(",")], args)
        return
    kept = [int(i) for i in args.trials.split(",")] if args.trials else list(range(len(SEQUENCE)))
    scenarios = args.scenarios.split(",")
    out = os.environ.get("OUT")
    began = time.monotonic()
    rows = []
    for round_ in range(1, args.rounds + 1):
        elapsed = time.monotonic() - began
        if round_ > 1 and elapsed * round_ / (round_ - 1) > args.until_s:
            break  # at the pace of the rounds before it, this one would end too late
        # every other round in the reverse order, so that no scenario always runs first (or on a warmer card)
        for scenario in scenarios if round_ % 2 else scenarios[::-1]:
            if scenario in FRESH_TRIALS:  # each trial in a process of its own
                processes = [[i] for i in FRESH_TRIALS[scenario] if i in kept]
            else:  # one process, the trials one after another
                processes = [kept]
            for trials in processes:
                rows += [{"round": round_, **row} for row in child(scenario, trials, args)]
        if out:  # after every round: a call stopped at its limit keeps the rounds it finished
            with open(Path(out) / "later_trials.jsonl", "w") as f:
                f.writelines(json.dumps(row) + "\n" for row in rows)
    header = list(rows[0]) if rows else []
    print(" | ".join(header))
    for row in rows:
        print(" | ".join(str(row[k]) for k in header))


if __name__ == "__main__":
    main()
