"""The resolution section: tokens per image from the model's name, one line per split (SP or TP degree, engine)
and checkpointing setting, the largest side that fits, and where each line's memory edge falls (out-of-memory
trials included, which analysis otherwise drops)."""

from __future__ import annotations

import pytest

from analysis.report.render import Bullets, Table
from analysis.report.sequence import patch_tokens, resolution_lines, resolution_section
from analysis.rows.load import load_sweep
from raysweep.core.store import ResultStore
from tests.test_analysis import add_trial

BASE = dict(model="vit_base_patch16_224", micro_batch_per_worker=1, samples_per_epoch=16, global_batch=1)


@pytest.mark.parametrize(
    "model, size, tokens",
    [("vit_base_patch16_224", 4096, 65536), ("vit_base_patch16_224", 0, 196), ("vit_micro_patch4_32", 32, 64)],
)
def test_patch_tokens_known_values(model, size, tokens):
    assert patch_tokens(model, size) == tokens


def test_patch_tokens_of_a_name_without_patch_size_is_unknown():
    assert patch_tokens("resnet50", 224) is None


def scientific_sweep(results) -> ResultStore:
    """SP 1 trains 1024 and 2048 px and runs out of memory at 4096; SP 2 trains all three."""
    store = ResultStore(results, "sci")
    for sp, size, status, memory, seconds in [
        (1, 1024, "completed", 4.0, 2.0),
        (1, 2048, "completed", 20.0, 8.0),
        (1, 4096, "oom", None, None),
        (2, 1024, "completed", 2.5, 2.4),
        (2, 2048, "completed", 11.0, 9.0),
        (2, 4096, "completed", 50.0, 40.0),
    ]:
        measured = {"peak_mem_gib": memory, "train_time_s": seconds} if status == "completed" else {}
        add_trial(
            store, f"sp{sp}_{size}", status=status, num_workers=sp, sequence_parallel=sp, image_size=size,
            activation_checkpointing=0, **BASE, **measured,
        )  # fmt: skip
    return store


def test_each_sp_degree_is_a_line_with_its_memory_edge(tmp_path):
    data = load_sweep(scientific_sweep(tmp_path).root)
    sp1, sp2 = resolution_lines(data)
    assert sp1.label.startswith("SP 1, checkpointing off") and sp2.label.startswith("SP 2")
    assert list(sp1.points["tokens"]) == [4096, 16384] and sp1.out_of_memory == (65536,)
    assert sp1.edge.endswith("between 16,384 tokens per image (trained) and 65,536 (out of memory)")
    assert "no memory edge" in sp2.edge
    # throughput per GPU: 2 epochs of 16 samples in 8 s on one rank; in 9 s on two ranks
    assert sp1.points["throughput_per_gpu"].tolist()[1] == pytest.approx(4.0)
    assert sp2.points["throughput_per_gpu"].tolist()[1] == pytest.approx(32 / 9 / 2)


def test_the_section_tables_memory_and_throughput_by_tokens(tmp_path):
    blocks = resolution_section(load_sweep(scientific_sweep(tmp_path).root))
    tables = [b for b in blocks if isinstance(b, Table)]
    assert len(tables) == 2 and tables[0].columns[0] == "tokens" and len(tables[0].columns) == 3
    assert [row[0] for row in tables[0].rows] == ["4096", "16384", "65536"]
    assert tables[0].rows[2][1] == "—" and tables[0].rows[2][2] == "50"  # SP 1 ran out there
    assert any(isinstance(b, Bullets) and "memory edge lies between" in b.items[0] for b in blocks)


def test_a_sweep_of_one_resolution_has_no_section(tmp_path):
    store = ResultStore(tmp_path, "one")
    add_trial(store, "a", num_workers=1, train_time_s=1.0, peak_mem_gib=1.0, **BASE)
    assert resolution_section(load_sweep(store.root)) == []


def model_parallel_sweep(results) -> ResultStore:
    """8 ranks at one global batch: DP 8 runs out of memory at 2048 px, TP 4 (ddp and megatron) trains 2048 px and
    runs out at 4096, SP 8 trains all three."""
    store = ResultStore(results, "mp")
    for name, engine, tp, sp, size, status, memory in [
        ("dp", "ddp", 1, 1, 1024, "completed", 30.0),
        ("dp", "ddp", 1, 1, 2048, "oom", None),
        ("tp", "ddp", 4, 1, 1024, "completed", 12.0),
        ("tp", "ddp", 4, 1, 2048, "completed", 50.0),
        ("tp", "ddp", 4, 1, 4096, "oom", None),
        ("mtp", "megatron", 4, 1, 1024, "completed", 10.0),
        ("mtp", "megatron", 4, 1, 2048, "completed", 40.0),
        ("sp", "ddp", 1, 8, 1024, "completed", 5.0),
        ("sp", "ddp", 1, 8, 2048, "completed", 18.0),
        ("sp", "ddp", 1, 8, 4096, "completed", 70.0),
    ]:
        measured = {"peak_mem_gib": memory, "train_time_s": 4.0} if status == "completed" else {}
        add_trial(
            store, f"{name}_{size}", status=status, num_workers=8, engine=engine, tensor_parallel=tp,
            sequence_parallel=sp, image_size=size, activation_checkpointing=1, **BASE, **measured,
        )  # fmt: skip
    return store


def test_tp_under_each_engine_sp_and_dp_alone_are_lines_with_their_largest_side(tmp_path):
    edges = sorted(line.edge for line in resolution_lines(load_sweep(model_parallel_sweep(tmp_path).root)))
    assert len(edges) == 4, edges
    tp_ddp = next(e for e in edges if e.startswith("TP 4") and "ddp" in e)
    assert "largest side that fits 2048 px" in tp_ddp and tp_ddp.endswith("and 65,536 (out of memory)")
    assert any(e.startswith("TP 4") and "megatron" in e and "no memory edge" in e for e in edges)
    assert any(e.startswith("SP 8") and "(up to 65,536 tokens per image, 4096 px)" in e for e in edges)
    assert any(e.startswith("SP 1") and "largest side that fits 1024 px" in e for e in edges)  # DP alone
