"""The report's predicted-scaling figure: what it draws (matplotlib's objects, not pixels) from a predictions
frame with measurements beside it, and that the report shows it only where the sweep has predictions."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pyarrow.parquet as pq
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.patches import Rectangle

from analysis import analyze
from analysis.prediction.link_model import INTRA_NODE, LinkFit, fit_rows
from analysis.prediction.predict import report_predictions
from analysis.report.plots import FIGURES, Plots, Series, predicted_scaling_figure
from analysis.report.prediction_section import PREDICTED_FIGURE, prediction_section
from analysis.report.render import Image
from analysis.report.report import images
from raysweep.core.schema import table_from_rows
from raysweep.core.store import ResultStore
from tests.test_analysis import add_trial
from tests.test_predict import trial

CONFIG = json.dumps({"engine": "ddp", "model": "m"})


def row(scaling: str, n: int, micro: int, step_ms: float, measured: tuple[float, float, float, int] | None = None):
    """One prediction; ``measured``: (median, min, max, repeats) of the step time where the sweep ran it."""
    median, low, high, repeats = measured or (None, None, None, 0)
    return {
        "configuration": CONFIG,
        "scaling": scaling,
        "num_workers": n,
        "micro_batch": micro,
        "global_batch": micro * n,
        "step_time_ms": step_ms,
        "speedup": 100.0 / step_ms * (micro * n) / 64,  # against 1 rank at 100 ms for 64 samples
        "efficiency": 100.0 / step_ms * (micro * n) / 64 / n,
        "measured": measured is not None,
        "measured_step_time_ms": median,
        "measured_min_ms": low,
        "measured_max_ms": high,
        "measured_repeats": repeats,
    }


def strong_measured_at_one_and_two() -> pd.DataFrame:
    """Strong scaling of 64 samples predicted at 1-8 ranks, measured at 1 and 2 (3 repeats); weak scaling
    predicted only."""
    return pd.DataFrame(
        [
            row("strong", 1, 64, 100.0, (100.0, 98.0, 104.0, 3)),
            row("strong", 2, 32, 60.0, (55.0, 50.0, 60.0, 3)),
            row("strong", 4, 16, 40.0),
            row("strong", 8, 8, 30.0),
        ]
        + [row("weak", n, 64, 100.0 + 10.0 * (n > 1)) for n in (1, 2, 4, 8)]
    )


def line(axes, label: str):
    return next(line for line in axes.get_lines() if line.get_label() == label)


def test_predicted_curves_run_through_every_count_and_measured_points_carry_their_spread():
    drawn = predicted_scaling_figure([("", strong_measured_at_one_and_two())])
    ratio, efficiency = [a for a in drawn.figure.axes if a.get_visible()]  # weak: measured nowhere, not drawn
    predicted = line(ratio, "global batch 64: predicted")
    assert predicted.get_linestyle() == "--" and predicted.get_markerfacecolor() == "none"  # hollow markers
    assert list(predicted.get_xdata()) == [1, 2, 4, 8]
    assert list(predicted.get_ydata()) == pytest.approx([1.0, 100 / 60, 100 / 40, 100 / 30])
    measured = next(c for c in ratio.containers if isinstance(c, ErrorbarContainer))
    assert measured.get_label() == "global batch 64: measured"
    points, _, (bars,) = measured.lines
    assert list(points.get_xdata()) == [1, 2]
    assert list(points.get_ydata()) == pytest.approx([100 / 100, 100 / 55])  # measured base's rate over each
    # the bar at 2 ranks: from its slowest repeat (60 ms) to its fastest (50 ms)
    assert bars.get_segments()[1][:, 1] == pytest.approx([100 / 60, 100 / 50])
    eff_points = next(c for c in efficiency.containers if isinstance(c, ErrorbarContainer)).lines[0]
    assert list(eff_points.get_ydata()) == pytest.approx([100.0, 100 / 55 / 2 * 100])
    ideal = line(ratio, "ideal")
    assert list(ideal.get_xdata()) == [0, 8] and list(ideal.get_ydata()) == [0, 8]
    shaded = [p for p in ratio.patches if isinstance(p, Rectangle)]
    assert shaded and shaded[0].get_x() == 2  # beyond the most ranks measured
    for axes in (ratio, efficiency):
        assert axes.get_xlim()[0] == 0 and axes.get_ylim()[0] == 0
    assert "Strong scaling predicted" in drawn.caption and "hollow markers: predicted" in drawn.caption
    assert "over up to 3 repeats" in drawn.caption and "shaded" in drawn.caption and "weak" not in drawn.caption


def test_with_nothing_measured_beyond_one_rank_every_predicted_kind_is_drawn_and_the_caption_says_so():
    frame = strong_measured_at_one_and_two()
    frame.loc[frame["num_workers"] > 1, "measured"] = False
    drawn = predicted_scaling_figure([("", frame)])
    assert len([a for a in drawn.figure.axes if a.get_visible()]) == 4  # strong and weak, speedup and efficiency
    assert not any(isinstance(c, ErrorbarContainer) for a in drawn.figure.axes for c in a.containers)
    assert "Strong scaling and weak scaling" in drawn.caption
    assert "nothing measured beyond one rank" in drawn.caption and "shaded" not in drawn.caption


class Analysis(SimpleNamespace):
    """What the figure and the section read of a ``SweepAnalysis``: its data, and its predictions when asked."""

    @property
    def predictions(self) -> pd.DataFrame:
        return report_predictions(self.data.sweep_dir, self.data.trials)


def sweep_analysis(sweep: Path, links: bool) -> Analysis:
    """A measured strong-scaling sweep (1 and 2 ranks), with a link table where ``links``."""
    if links:
        (sweep / "links").mkdir(parents=True)
        points = [
            {"row": "point", "link_class": INTRA_NODE, "collective": "all_reduce", "ranks": 2, "bytes": n}
            | {"time_s": LinkFit(1e-5, 1e9).time_s("all_reduce", n, 2)}
            for n in (1024, 2**20, 2**24)
        ]
        pq.write_table(table_from_rows("links", points + fit_rows(points)), sweep / "links" / "links.parquet")
    trials = pd.DataFrame([trial("a", 1, 64, 100.0), trial("b", 2, 32, 55.0), trial("c", 2, 32, 58.0)])
    return Analysis(data=SimpleNamespace(sweep_dir=sweep, trials=trials))


def test_the_report_shows_the_figure_only_where_the_sweep_has_predictions(tmp_path):
    draw = FIGURES[PREDICTED_FIGURE]
    bare = sweep_analysis(tmp_path / "bare", links=False)
    assert "no link table" in draw([Series("", bare)])  # the registry's reason: the figure is not made
    assert prediction_section(bare, []) == []

    probed = sweep_analysis(tmp_path / "probed", links=True)
    drawn = draw([Series("", probed)])
    ratio = drawn.figure.axes[0]
    assert list(line(ratio, "global batch 64: predicted").get_xdata()) == [1, 2, 4, 8]  # 4x the 2 ranks measured
    assert "measured medians" in drawn.caption and "over up to 2 repeats" in drawn.caption
    plots = Plots({PREDICTED_FIGURE: tmp_path / "predicted_scaling.png"}, {}, {PREDICTED_FIGURE: drawn.caption})
    section = prediction_section(probed, images(plots, PREDICTED_FIGURE))
    assert section[-1] == Image(tmp_path / "predicted_scaling.png", drawn.caption)  # under the tables
    assert images(Plots({}, {PREDICTED_FIGURE: "no link table"}), PREDICTED_FIGURE) == []


def test_a_report_draws_predicted_scaling_once_its_sweep_has_a_link_table(tmp_path):
    store = ResultStore(tmp_path, "strong")
    for n, step_ms in ((1, 100.0), (2, 56.0)):
        add_trial(
            store, f"s{n}", num_workers=n, micro_batch_per_worker=256 // n, global_batch=256, data_scaling="fixed",
            samples_per_epoch=4096, train_time_s=step_ms * 16 / 1000, step_time_ms=step_ms, trainable_params=10**6,
        )  # fmt: skip
    report = analyze(store.root)
    assert not (report.parent / "predicted_scaling.png").exists()
    assert "`predicted_scaling`: the sweep has no link table" in report.read_text(encoding="utf-8")
    sweep_analysis(store.root, links=True)  # writes the link table beside the trials
    report = analyze(store.root)
    assert (report.parent / "predicted_scaling.png").stat().st_size > 1000
    text = report.read_text(encoding="utf-8")
    assert text.index("## Predicted scaling") < text.index("predicted_scaling.png")


def test_series_are_named_by_the_configuration_parameters_that_differ_and_capped_with_the_caption_saying_so():
    frames = []
    for engine in ("ddp", "deepspeed"):
        frame = strong_measured_at_one_and_two()
        frame["configuration"] = json.dumps({"engine": engine, "model": "m"})
        frames.append(("", frame))
    drawn = predicted_scaling_figure(frames)
    labels = {line.get_label() for line in drawn.figure.axes[0].get_lines()}
    assert {"engine=ddp, global batch 64: predicted", "engine=deepspeed, global batch 64: predicted"} <= labels
    assert "series drawn" not in drawn.caption
    many = [("", strong_measured_at_one_and_two().assign(configuration=json.dumps({"seed": s}))) for s in range(8)]
    drawn = predicted_scaling_figure(many)
    assert len([line for line in drawn.figure.axes[0].get_lines() if "predicted" in line.get_label()]) == 6
    assert "6 of 8 series drawn" in drawn.caption
