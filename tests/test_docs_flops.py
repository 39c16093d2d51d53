"""Every FLOP figure in README.md and docs/*.md is the project's own count: a training FLOP count a sample is
``trainers.flops.training_flops_per_sample`` of the model (2 FLOPs a multiply-add, 3 x forward), never a typed one
nor a model card's MACs; a spec peak is ``trainers.flops.PEAK_FLOPS``'s. The study's prediction counts its FLOPs
from the model its inputs name."""

from __future__ import annotations

import json
import re

import pytest
import timm

from tests.test_docs_render import ROOT, render
from trainers.measure.flops import PEAK_FLOPS, training_flops_per_sample

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GFLOP = re.compile(r"(\d+(?:\.\d+)?) ?GFLOP\b")
SPEC_PEAK = re.compile(r"spec peak[^0-9]{0,40}?(\d+(?:\.\d+)?) TFLOP/s")
study_prediction = render.figures.study_prediction


@pytest.fixture(scope="module")
def vit_b16_224() -> float:
    return training_flops_per_sample(timm.create_model("vit_base_patch16_224", num_classes=10))


def figures_of(pattern: re.Pattern) -> list[tuple[str, str]]:
    return [(doc.name, m[1]) for doc in DOCS for m in pattern.finditer(doc.read_text())]


def test_every_gflop_figure_in_the_docs_is_the_counted_vit_b16_at_224(vit_b16_224):
    found = figures_of(GFLOP)
    assert found, "the docs quote no GFLOP figure: this test has nothing to pin"
    # ViT-B/16 at 224 px is the only model whose FLOPs the docs quote
    assert {value for _, value in found} == {f"{vit_b16_224 / 1e9:.1f}"}, found


def test_every_spec_peak_in_the_docs_is_in_the_peak_table():
    table = {f"{flops / 1e12:g}" for by_precision in PEAK_FLOPS.values() for flops in by_precision.values()}
    found = figures_of(SPEC_PEAK)
    assert found and {value for _, value in found} <= table, found


def test_the_prediction_counts_its_flops_from_the_model_its_inputs_name(vit_b16_224):
    inputs = json.loads(study_prediction.INPUTS.read_text())
    assert "flops_per_sample" not in inputs and "trainable_params" not in inputs  # counted, not typed
    study = study_prediction.study()
    assert study.flops_per_sample == pytest.approx(vit_b16_224)
    assert study.flops_per_sample / 1e9 == pytest.approx(105.38, abs=0.01)  # 2 FLOPs a MAC, not timm's 3 x 17.6 GMACs
    assert f"| `flops_per_sample` | {vit_b16_224 / 1e9:.1f} GFLOP |" in study_prediction.study_prediction_inputs()


def test_the_prediction_compute_is_the_counted_flops_over_the_assumed_share_of_peak():
    study = study_prediction.study()
    # known answer: 128 samples x 105.38 GFLOP / (0.35 x 65 TFLOP/s) = 593 ms
    assert study["mfu"] == 0.35 and study["peak_flops"] == 65e12
    assert study.compute_ms(128) == pytest.approx(128 * 105.38e9 / (0.35 * 65e12) * 1e3, rel=1e-3)


def test_each_predicted_efficiency_carries_the_range_the_validations_errors_give():
    study = study_prediction.study()
    v = study_prediction.validation()
    errors = [r["error"] for r in v.rows]
    # measured = predicted / (1 + error): the largest over-prediction shortens the step, the largest
    # under-prediction lengthens it; with errors of one sign the prediction itself bounds the other side
    assert v.step_scales == (1 / (1 + max(max(errors), 0.0)), 1 / (1 + min(min(errors), 0.0)))
    e = study.efficiency(64, 4, 10, 0.0)
    low_scale, high_scale = 0.5, 1.25  # a known answer: efficiency is inversely proportional to the step's scale
    cell = study_prediction.with_range(study, 64, 4, 10, 0.0, (low_scale, high_scale))
    assert cell == f"{e:.2f} ({e / high_scale:.2f}-{min(1.0, e / low_scale):.2f})"
    assert f"x{v.step_scales[0]:.2f} to x{v.step_scales[1]:.2f}" in study_prediction.study_prediction_validation()
