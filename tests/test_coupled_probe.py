"""The coupled probe's pieces on one process: when each gradient bucket's all-reduce is launched, and the load's
hooks reporting the gradient bytes the backward pass has produced."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from trainers.coupled_probe import Buckets, CoupledPlan, Load, launch_points


@pytest.fixture
def one_rank(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_a_bucket_is_ready_once_the_backward_pass_has_produced_its_bytes_and_those_before_it():
    assert launch_points((100, 50, 25)) == [100, 150, 175]


def test_buckets_are_launched_in_order_as_their_bytes_are_produced_and_all_by_the_wait(one_rank):
    buckets = Buckets(CoupledPlan("m", 32, 1, (400, 200, 100)), group=None)
    assert [b.numel() for b in buckets.buffers] == [100, 50, 25]  # fp32 elements
    buckets.launch_ready(399)
    assert len(buckets.handles) == 0
    buckets.launch_ready(650)  # past the first two buckets' 400 and 600 bytes, short of the third's 700
    assert len(buckets.handles) == 2
    buckets.wait()  # launches the third, waits for all, and is ready for the next step
    assert buckets.handles == [] and all(float(b[0]) == 1.0 for b in buckets.buffers)  # one rank: the sum of one


def test_the_loads_backward_pass_reports_every_gradient_byte_in_the_reduce_dtype():
    load = Load(CoupledPlan("vit_micro_patch4_32", 32, 2, (1,), element_bytes=2))
    seen = []
    load.on_grad_bytes = seen.append
    load.step()
    params = sum(p.numel() for p in load.model.parameters() if p.requires_grad)
    assert seen == sorted(seen) and seen[-1] == params * 2
    assert torch.isfinite(next(load.model.parameters())).all()  # the optimizer stepped on finite gradients
