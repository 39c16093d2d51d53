"""The full stack compiled against hand-written PyTorch on one H100 (docs/results/h100-bench-compile)."""

from __future__ import annotations

from . import figure, summary, table


@figure("h100-bench-compile")
def h100_bench_compile() -> str:
    rows = summary("h100-bench-compile")
    body = []
    for batch in sorted({r["batch"] for r in rows}):
        plain = [r for r in rows if r["batch"] == batch and r["what"] != "stack"]
        best = max(plain, key=lambda r: r["img_s"])
        eager = next(r for r in plain if r["what"] == "eager")
        (stack,) = [r for r in rows if r["batch"] == batch and r["what"] == "stack"]
        body.append(
            [
                str(batch),
                f"{eager['img_s']:.1f}",
                best["what"],
                f"{best['img_s']:.1f} ({best['img_s_min']:.1f}-{best['img_s_max']:.1f})",
                f"{stack['img_s']:.1f} ({stack['img_s_min']:.1f}-{stack['img_s_max']:.1f})",
                f"**{stack['img_s'] / best['img_s']:.3f}**",
                f"{stack['setup_s']:.1f}",
                f"{stack['warmup_s']:.1f}",
            ]
        )
    header = ["micro batch", "eager img/s", "best hand-written", "its img/s", "stack compiled img/s", "ratio"]
    return table([*header, "later trial's setup (s)", "its warm-up (s)"], body, "rrlrrrrr")
