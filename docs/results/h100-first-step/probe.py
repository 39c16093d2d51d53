"""Where a fresh GPU rank's seconds after its imports go: the engine's build and the first steps, profiled.

One fresh process does what a shared group's first trial does on its rank: import torch and Ray Train's
torch integration, a one-rank NCCL process group on the device (as Ray Train makes it; ``--eager`` passes
``device_id`` so NCCL's communicator is made there rather than at the first collective), the trial's
imports, ViT-B/16 on the device, the DeepSpeed engine (``trainers.engines.build_engine``), NVML's energy
window (as ``train_trial`` opens it), three training steps.  Prints one JSON line of each phase's end
(seconds since the process started) and, with ``--profile``, cProfile's top functions of the engine's
build and of the first step to stderr.

    DS_ACCELERATOR=cuda python docs/results/h100-first-step/probe.py [--batch 64] [--eager] [--profile]
"""

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402


def profiled(enabled: bool, title: str, fn):
    if not enabled:
        return fn()
    import cProfile
    import pstats

    prof = cProfile.Profile()
    result = prof.runcall(fn)
    print(f"==== {title}", file=sys.stderr)
    stats = pstats.Stats(prof, stream=sys.stderr)
    stats.sort_stats("cumulative").print_stats(35)
    stats.sort_stats("tottime").print_stats(15)
    return result


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--eager", action="store_true")
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    marks = {}

    def mark(name):
        marks[name] = round(time.perf_counter() - STARTED, 3)

    import ray.train.torch  # noqa: F401
    import torch
    import torch.distributed as dist

    mark("import torch, ray.train.torch")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("PORT", "29533"), RANK="0",
                      WORLD_SIZE="1", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")  # fmt: skip
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=device if args.eager else None)
    mark("process group, device")
    sys.path.insert(0, os.getcwd())
    import deepspeed  # noqa: F401
    import timm  # noqa: F401

    import trainers.train_loop  # noqa: F401

    mark("imports")
    from raysweep.params import TrialParams

    from trainers.engines import build_engine
    from trainers.model.models import create_model

    params = TrialParams(
        model="vit_base_patch16_224", dataset="synthetic", micro_batch_per_worker=args.batch, precision="bf16"
    ).resolve(True)
    torch.manual_seed(0)
    with torch.device(device):
        model = create_model(params.model, 10, 224, 3)
    torch.cuda.synchronize()
    mark("model")

    def build():
        engine = build_engine(params, model, device, total_steps=10)
        torch.cuda.synchronize()
        return engine

    engine = profiled(args.profile, "engine build", build)
    mark("engine")
    from trainers.measure.energy import energy_window

    energy_window(device)
    mark("energy window (NVML)")
    x = torch.randn(args.batch, 3, 224, 224, device=device, dtype=engine.input_dtype)
    y = torch.randint(0, 10, (args.batch,), device=device)

    def step():
        loss = torch.nn.functional.cross_entropy(engine(x).float(), y)
        engine.backward(loss)
        engine.step()
        torch.cuda.synchronize()

    for i, name in enumerate(("first step", "second step", "third step")):
        profiled(args.profile and i == 0, name, step)
        mark(name)
    dist.destroy_process_group()
    print(json.dumps({"eager": args.eager, **marks}), flush=True)


if __name__ == "__main__":
    main()
