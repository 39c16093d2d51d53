"""Where a fresh GPU rank's first seconds go, with and without the device warm-up thread (device_warmup.py here).

Each run is a fresh process doing what a group's first trial does on its rank, in order: import torch
and Ray Train's torch integration, a one-rank NCCL process group and the device (as Ray Train does
before the training function), then (mode ``warm``: with the warm-up thread started) the trial's
imports (``trainers.train_loop``, timm, DeepSpeed), the model on the device, the DeepSpeed engine
(``trainers.engines.build_engine``), a first and a second training step.  Prints each phase's end,
seconds since the process started, one JSON line per run.

    python docs/results/h200-device-warm/probe.py [--runs 3] [--batch 256] [--profile]
"""

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402


def one_run(mode: str, batch: int, profile: bool) -> dict:
    marks = {}

    def mark(name):
        marks[name] = round(time.perf_counter() - STARTED, 3)

    import ray.train.torch  # noqa: F401
    import torch
    import torch.distributed as dist

    mark("import torch, ray.train.torch")
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=os.environ.get("PORT", "29533"),
        RANK="0",
        WORLD_SIZE="1",
        LOCAL_RANK="0",
        LOCAL_WORLD_SIZE="1",
    )
    dist.init_process_group("nccl", rank=0, world_size=1)
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    mark("process group, device")
    sys.path.insert(0, os.getcwd())
    warm = None
    if mode == "warm":
        from device_warmup import warm_device_in_background

        warm = warm_device_in_background(device)
    import deepspeed  # noqa: F401
    import timm  # noqa: F401

    import trainers.train_loop  # noqa: F401

    mark("imports")
    if warm is not None:
        warm.join()
        mark("warm-up joined")
    from raysweep.params import TrialParams

    from trainers.engines import build_engine
    from trainers.model.models import create_model

    params = TrialParams(
        model="vit_base_patch16_224", dataset="synthetic", micro_batch_per_worker=batch, precision="bf16"
    ).resolve(True)
    torch.manual_seed(0)
    with torch.device(device):
        model = create_model(params.model, 10, 224, 3)
    torch.cuda.synchronize()
    mark("model")
    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
    engine = build_engine(params, model, device, total_steps=10)
    torch.cuda.synchronize()
    if profile:
        prof.disable()
        pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
    mark("engine")
    x = torch.randn(batch, 3, 224, 224, device=device, dtype=engine.input_dtype)
    y = torch.randint(0, 10, (batch,), device=device)
    for step in ("first step", "second step"):
        loss = torch.nn.functional.cross_entropy(engine(x).float(), y)
        torch.cuda.synchronize()
        mark(f"{step} forward")
        engine.backward(loss)
        engine.step()
        torch.cuda.synchronize()
        mark(step)
    dist.destroy_process_group()
    return marks


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--mode")
    args = p.parse_args()
    if args.mode:
        print(json.dumps({"mode": args.mode, **one_run(args.mode, args.batch, args.profile)}), flush=True)
        return
    for i in range(args.runs):
        for mode in ("plain", "warm") if i % 2 == 0 else ("warm", "plain"):
            env = {**os.environ, "PORT": str(29600 + i * 2 + (mode == "warm")), "DS_ACCELERATOR": "cuda"}
            cmd = [sys.executable, __file__, "--mode", mode, "--batch", str(args.batch)]
            if args.profile and i == 0:
                cmd.append("--profile")
            out = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if out.returncode:
                print(out.stderr[-3000:], file=sys.stderr)
                continue
            if args.profile and i == 0:
                print(out.stderr[-6000:], file=sys.stderr)
            print(out.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
