"""``compile=auto``: whether torch.compile pays for itself in a trial, from what it costs and what it saves.

A compiled trial pays its compile once (its warm-up grows by it) and then runs each step ``speedup``
times faster than eager.  It pays where its planned steps save more than that:

    planned steps x eager step time x (1 - 1 / speedup)  >  compile seconds

The three figures come from the sweep's own earlier trials of the same model, image size, micro batch and
precision where both an eager and a compiled one completed, compiled in the mode this trial would compile in
(``measured_cost``), else from the defaults per model family and mode below, and the reason a trial records
names which: ``max-autotune-no-cudagraphs`` tunes its kernels for minutes, so it pays only where the other
modes' compile would pay many times over.  Compiling in ``auto`` picks CUDA graphs (``reduce-overhead``) for
small micro batches, where a step is bound by kernel launches and Python work.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from typing import Any

from raysweep.core.compile_defaults import MEASURED_DEFAULTS
from raysweep.core.params import TrialParams

# At and below this micro batch a ViT step on an H100/H200 is bound by kernel launches and Python work
# (the full stack's eager step falls furthest behind plain PyTorch there): CUDA graphs remove both.
LAUNCH_BOUND_MICRO_BATCH = 64


@dataclass(frozen=True)
class CompileCost:
    """What compiling a model costs and gains on one rank."""

    compile_s: float  # seconds the compile adds to a trial's warm-up
    speedup: float  # eager step time over compiled step time
    sample_s: float  # eager seconds per training sample on one rank
    source: str  # where the figures come from, as the trial's reason states it

    def saving_s(self, steps: int, samples_per_step: int) -> float:
        """Seconds that ``steps`` compiled steps of ``samples_per_step`` samples save against eager."""
        return steps * samples_per_step * self.sample_s * (1 - 1 / self.speedup)


# Defaults per model family (the model name's first two words) and compile mode, used where the sweep has
# measured nothing: generated from committed bench summaries (raysweep/core/compile_defaults.py says which).
DEFAULT_COSTS: dict[str, dict[str, CompileCost]] = {
    family: {mode: CompileCost(*figures) for mode, figures in modes.items()}
    for family, modes in MEASURED_DEFAULTS.items()
}
# Families without figures of their own take ViT-B/16's: the same blocks, so a similar compile and gain.
FALLBACK_FAMILY = "vit_base"
# A mode without figures of its own takes the default mode's: reduce-overhead compiles about as long as the
# default mode (docs/results/h100-bench-compile/summary-autotune.csv), and its gain at small micro batches
# is what the sweep's own trials then measure.
FALLBACK_MODE = "default"


def model_family(model: str) -> str:
    return "_".join(model.split("_")[:2])


def default_cost(model: str, mode: str = FALLBACK_MODE) -> CompileCost:
    """The default figures for ``model`` compiled in ``mode``, their source saying what stood in for what."""
    family = model_family(model)
    modes = DEFAULT_COSTS.get(family, DEFAULT_COSTS[FALLBACK_FAMILY])
    cost = modes.get(mode, modes[FALLBACK_MODE])
    if mode not in modes:
        cost = dataclasses.replace(cost, source=f"no {mode} default, so the {FALLBACK_MODE} mode's: {cost.source}")
    if family not in DEFAULT_COSTS:
        cost = dataclasses.replace(cost, source=f"no default for {family}, so {cost.source}")
    return cost


def compiled_mode(compile: str, compile_mode: str, micro_batch: int) -> str:
    """The mode a trial compiles in: as set, but ``auto`` takes CUDA graphs for a launch-bound micro batch
    where no mode was set."""
    if compile == "auto" and compile_mode == "default" and micro_batch <= LAUNCH_BOUND_MICRO_BATCH:
        return "reduce-overhead"
    return compile_mode


@dataclass(frozen=True)
class CompileDecision:
    """What a trial runs: compiled or eager, in which mode, and why."""

    compiled: bool
    mode: str  # the compile_mode the trial runs in
    reason: str

    def applied(self, params: TrialParams) -> TrialParams:
        """``params`` as the trial runs them: ``compile`` true or false, never auto."""
        return dataclasses.replace(params, compile="true" if self.compiled else "false", compile_mode=self.mode)


def decide_compile(params: TrialParams, planned_steps: int, measured: CompileCost | None = None) -> CompileDecision:
    """The trial's compile: as set, or for ``auto`` whether ``planned_steps`` optimizer steps pay for it."""
    if params.compile != "auto":
        return CompileDecision(params.compile == "true", params.compile_mode, f"compile={params.compile}")
    eager = engine_refusal(params)
    if eager:
        return CompileDecision(False, params.compile_mode, f"auto: eager, {eager}")
    mode = compiled_mode(params.compile, params.compile_mode, params.effective_micro_batch)
    cost = measured or default_cost(params.model, mode)
    samples_per_step = params.effective_micro_batch * params.grad_accum_steps
    saving = cost.saving_s(planned_steps, samples_per_step)
    figures = (
        f"{planned_steps} steps save ~{saving:.1f} s at {cost.speedup:.2f}x against a {cost.compile_s:.1f} s "
        f"compile ({cost.source})"
    )
    if saving <= cost.compile_s:
        return CompileDecision(False, params.compile_mode, f"auto: eager, {figures}")
    why_mode = ""
    if mode != params.compile_mode:
        why_mode = (
            f" in {mode} (CUDA graphs: micro batch {params.effective_micro_batch} <= "
            f"{LAUNCH_BOUND_MICRO_BATCH} is launch-bound)"
        )
    return CompileDecision(True, mode, f"auto: compiled{why_mode}, {figures}")


def engine_refusal(params: TrialParams) -> str:
    """Why ``auto`` leaves this trial eager whatever its length; empty where it may compile."""
    if params.device != "gpu":
        # Inductor on CPU generates and builds C++ for minutes, and the small models CPU sweeps train
        # gain little from it: the CPU step is bound by the matmuls, not by launches.
        return "CPU trial (auto compiles GPU trials only)"
    if params.engine in ("fsdp", "megatron"):
        return f"engine={params.engine} does not compile"
    if params.tensor_parallel > 1:
        return f"tensor_parallel={params.tensor_parallel} does not compile"
    if params.zero_stage == 3:
        return "zero_stage=3 does not compile (parameters are partitioned)"
    return ""


def measured_cost(rows: list[dict[str, Any]], params: TrialParams) -> CompileCost | None:
    """The compile's cost and gain from a sweep's trials rows of ``params``' model and shape: completed GPU
    trials of the same model, image size, micro batch and precision, at least one eager and one compiled in
    the mode ``params`` would compile in (their medians); None where either is missing."""
    mode = compiled_mode(params.compile, params.compile_mode, params.effective_micro_batch)
    shape = {
        "model": params.model,
        "image_size": params.image_size,
        "micro_batch_per_worker": params.effective_micro_batch,
        "precision": params.precision,
        "device": "gpu",
        "status": "completed",
    }
    alike = [
        r
        for r in rows
        if all(r.get(k) == v for k, v in shape.items())
        and r.get("compiled") is not None
        and r.get("warmup_s") is not None
        and r.get("throughput_per_worker")
    ]
    compiled = [r for r in alike if r["compiled"] and row_mode(r) == mode]
    eager = [r for r in alike if not r["compiled"]]
    if not compiled or not eager:
        return None

    def median(group: list[dict[str, Any]], column: str) -> float:
        return statistics.median(r[column] for r in group)

    eager_rate = median(eager, "throughput_per_worker")
    return CompileCost(
        compile_s=max(0.0, median(compiled, "warmup_s") - median(eager, "warmup_s")),
        speedup=median(compiled, "throughput_per_worker") / eager_rate,
        sample_s=1 / eager_rate,
        source=f"measured: {len(compiled)} compiled and {len(eager)} eager earlier trials of this shape",
    )


def row_mode(row: dict[str, Any]) -> str:
    """The mode a compiled trial's row ran in (the row keeps the ``compile`` and ``compile_mode`` it was given)."""
    return compiled_mode(
        str(row.get("compile") or "true"), row.get("compile_mode") or FALLBACK_MODE, row["micro_batch_per_worker"]
    )
