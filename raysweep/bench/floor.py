"""The cold-process floor of one trial's rank: what a fresh Python process needs before its first step is done.

``python -m raysweep.bench.floor --model M --batch B`` imports torch, timm, DeepSpeed and
``ray.train.torch``, starts the device and a one-rank process group, builds the model on the device,
the trial's engine (``trainers.engines.build_engine``, as a trial does) and takes one training step,
then prints one JSON line: each phase's end in seconds since the process's first line of Python
(``phases``) and since the parent asked for the process (``since_launch_s``, when ``--launched-at``
is given).  No Ray cluster, no Tune, no Train controller: the work a trial cannot avoid, which is what
``setup_s`` is compared against (``python -m raysweep.bench``).
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()
STARTED_AT = time.time()

import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from raysweep.core.command import ArgumentParser, exit_process, run_command  # noqa: E402  (standard library only)
from raysweep.runtime.caches.bytecode_cache import bytecode_cache  # noqa: E402  (standard library only)
from raysweep.runtime.cluster import free_port  # noqa: E402  (standard library only)


def measure(model_name: str, batch: int) -> dict[str, float]:
    """Each phase's end, seconds since this process started its first line of Python."""
    marks: dict[str, float] = {}

    def mark(phase: str) -> None:
        marks[phase] = time.perf_counter() - STARTED

    import torch

    mark("import torch")
    gpu = torch.cuda.is_available()
    device = torch.device("cuda" if gpu else "cpu")
    if gpu:
        torch.zeros(1, device=device)
        torch.cuda.synchronize()
    else:
        torch.set_num_threads(1)  # as a trial's rank, which holds one CPU (cpus_per_worker)
    mark("device")
    import timm  # noqa: F401  (timed on its own: the model below needs it)

    mark("import timm")
    os.environ.setdefault("DS_ACCELERATOR", "cuda" if gpu else "cpu")
    from trainers.engines.deepspeed import import_deepspeed  # as a trial's rank imports it

    import_deepspeed()
    mark("import deepspeed")
    import ray.train.torch  # noqa: F401  (a trial's worker imports it)

    mark("import ray.train.torch")
    import torch.distributed as dist

    # Ray Train starts the process group before the trial's code runs; so does this.
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0", WORLD_SIZE="1")
    os.environ.update(LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")
    dist.init_process_group("nccl" if gpu else "gloo", rank=0, world_size=1)
    mark("process group")
    from raysweep.core.params import TrialParams
    from trainers.engines import build_engine
    from trainers.model.models import create_model, native_image_size

    params = TrialParams(model=model_name, dataset="synthetic", micro_batch_per_worker=batch).resolve(gpu)
    with torch.device(device):
        model = create_model(params.model, num_classes=10)
    if gpu:
        torch.cuda.synchronize()
    mark("model on device")
    engine = build_engine(params, model, device, total_steps=10)
    mark("engine")
    size = native_image_size(model_name)
    x = torch.randn(batch, 3, size, size, device=device, dtype=engine.input_dtype)
    y = torch.randint(0, 10, (batch,), device=device)
    engine.backward(torch.nn.functional.cross_entropy(engine(x).float(), y))
    engine.step()
    if gpu:
        torch.cuda.synchronize()
    mark("first step")
    dist.destroy_process_group()
    return marks


def cold_floor(model_name: str, batch: int, timeout_s: float = 600) -> dict:
    """Run the floor in a fresh subprocess (this one's environment) and return its figures.

    ``floor_s`` is from asking for the process to its first step's end; ``engine_ready_s`` to the end
    of the engine's build (the mark ``setup_s`` corresponds to: a trial's setup ends as its first step starts).
    """
    launched_at = time.time()
    command = [sys.executable, "-m", "raysweep.bench.floor", "--model", model_name, "--batch", str(batch)]
    proc = subprocess.run(
        [*command, "--launched-at", repr(launched_at)], capture_output=True, text=True, timeout=timeout_s
    )
    if proc.returncode != 0:
        raise RuntimeError(f"cold floor: {' '.join(command)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    since = result["since_launch_s"]
    return {
        **result,
        "command": " ".join(["python", *command[1:]]),
        "process_wall_s": time.time() - launched_at,
        "floor_s": since["first step"],
        "engine_ready_s": since["engine"],
    }


def main(argv: list[str] | None = None) -> int:
    return run_command(floor_command, argv)


def floor_command(argv: list[str] | None) -> int:
    p = ArgumentParser(prog="python -m raysweep.bench.floor", description=__doc__.split("\n")[0])
    p.add_argument("--model", default="vit_base_patch16_224", help="timm model name or raysweep preset")
    p.add_argument("--batch", type=int, default=128, help="micro batch of the one step")
    p.add_argument("--launched-at", type=float, help="time.time() when the parent started this process")
    args = p.parse_args(argv)
    # Under the bytecode cache a sweep's processes would get here: the floor and a sweep's setup are compared
    # under one condition, whether bench or a user starts this command.
    with bytecode_cache():
        phases = measure(args.model, args.batch)
    # interpreter start and the -m lookup happen before this module's first line: counted when known
    startup = STARTED_AT - args.launched_at if args.launched_at is not None else 0.0
    result = {
        "model": args.model,
        "batch": args.batch,
        "startup_s": startup,
        "phases": phases,
        "since_launch_s": {k: v + startup for k, v in phases.items()},
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    exit_process(main())
