"""The device warm-up a group's rank runs beside its imports leaves nothing a trial could see."""

import pytest
import torch
import torch.distributed as dist

from trainers.device_warmup import warm_device, warm_device_in_background

DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


def rng_state(device: torch.device) -> torch.Tensor:
    return torch.cuda.get_rng_state(device) if device.type == "cuda" else torch.get_rng_state()


def test_a_cpu_rank_starts_no_thread():
    assert warm_device_in_background(torch.device("cpu")) is None


@pytest.mark.parametrize("device", DEVICES)
def test_it_draws_no_random_numbers(device: str):
    device = torch.device(device)
    before = rng_state(device)
    if device.type == "cuda":
        warm_device_in_background(device).join()
    else:
        warm_device(device)
    assert torch.equal(rng_state(device), before)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_its_tensors_do_not_outlive_it():
    device = torch.device("cuda", 0)
    warm_device(device)  # what stays is what any first step makes: the libraries' handles, cuBLAS's workspace
    allocated = torch.cuda.memory_allocated(device)
    warm_device_in_background(device).join()
    assert torch.cuda.memory_allocated(device) == allocated


@pytest.mark.parametrize("device", DEVICES)
def test_the_process_groups_collectives_still_agree_after_its_one(device: str, monkeypatch):
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29571")
    device = torch.device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=0, world_size=1)
    try:
        warm_device(device)
        total = torch.full((1,), 3.0, device=device)
        dist.all_reduce(total)
        assert total.item() == 3.0
    finally:
        dist.destroy_process_group()
