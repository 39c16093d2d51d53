"""The later-trials check (docs/results/h100-engines-1gpu/later_trials.py) in its smoke form on the CPU: a shared
process's trials with the teardown from before ``Engine.close`` and ``ProcessState`` and with today's, and a fresh
process with DeepSpeed ZeRO-3's ``F.linear`` in place; the micro ViT at 32 px, gloo, two steps a trial. On the CPU
its throughput means nothing; what the old teardown leaked, and what today's does not, shows as it does on a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.integration.conftest import REPO, explain

SCRIPT = "docs/results/h100-engines-1gpu/later_trials.py"
SMALL = ["--model", "vit_micro_patch4_32", "--image-size", "32", "--batch", "8", "--precision", "fp32"]


def test_the_later_trials_script_runs_small_and_shows_the_old_teardowns_leak(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(REPO / SCRIPT), *SMALL, "--steps", "2", "--warmup", "1", "--trials", "3,4"]
        + ["--scenarios", "shared-before,shared-now,fresh-zero3-linear", "--rounds", "2", "--until-s", "0"],
        cwd=tmp_path,
        env=os.environ | {"PYTHONPATH": str(REPO), "OUT": str(tmp_path), "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, explain(proc)
    rows = [json.loads(line) for line in (tmp_path / "later_trials.jsonl").read_text().splitlines()]
    # ZeRO-3 then FSDP2 in each shared process, FSDP2 alone in the fresh one; no second round (--until-s 0)
    assert [(r["round"], r["scenario"], r["trial"]) for r in rows] == [
        (1, "shared-before", 3),
        (1, "shared-before", 4),
        (1, "shared-now", 3),
        (1, "shared-now", 4),
        (1, "fresh-zero3-linear", 4),
    ]
    by = {(r["scenario"], r["trial"]): r for r in rows}
    # the old teardown keeps the ZeRO-3 engine's tensors and its F.linear for the next trial; today's neither
    assert by[("shared-before", 3)]["allocated_after_gib"] > 0.1 > by[("shared-now", 3)]["allocated_after_gib"]
    assert by[("shared-before", 4)]["linear_at_start"] == "deepspeed"
    assert by[("shared-now", 4)]["linear_at_start"] == "torch"
    assert by[("fresh-zero3-linear", 4)]["linear_at_start"] == "deepspeed"
    for r in rows:
        assert r["img_s"] > 0 and r["peak_gib"] > 0 and r["cpu_s"] >= 0, r
        assert r["minor_faults"] >= 0 and r["gc_full"] >= 0 and r["gc_s"] >= 0, r
