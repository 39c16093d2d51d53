"""Where a compiled ViT-B/16 step's time goes on one H100 (docs/results/h100-step-profile)."""

from __future__ import annotations

from . import figure, summary, table

TARGET_IMG_S = 4000  # the compiled figure at micro batch 256 (on an H200)


@figure("h100-step-profile")
def h100_step_profile() -> str:
    rows = summary("h100-step-profile")
    body = [
        [
            r["kind"],
            str(r["kernels_per_step"]),
            f"{r['device_ms_per_step']:.2f}",
            f"{r['share_of_step']:.1%}",
            f"{r['tflop_per_step']:.2f}" if r["tflop_per_step"] else "",
            f"{r['achieved_tflops']:.0f}" if r["achieved_tflops"] else "",
        ]
        for r in rows
    ]
    header = ["kind of kernel", "kernels a step", "device ms a step", "share of the step", "TFLOP a step"]
    return table([*header, "TFLOP/s reached"], body, "lrrrrr")


@figure("h100-step-profile-says")
def h100_step_profile_says() -> str:
    rows = {r["kind"]: r for r in summary("h100-step-profile")}
    gemm, attention = rows["matrix product"], rows["attention"]
    elementwise = rows["fused elementwise and norms (triton)"]
    step = gemm  # every row carries the step's own figures
    at_ceiling_ms = gemm["tflop_per_step"] / step["matmul_ceiling_tflops"] * 1000
    target_ms = step["batch"] / TARGET_IMG_S * 1000
    return (
        f"{step['device']}, micro batch {step['batch']}, compiled ({step['compile_mode']} mode): "
        f"{step['step_ms']:.1f} ms a step ({step['step_ms_min']:.1f}-{step['step_ms_max']:.1f} over 3 windows), "
        f"{step['img_s']:.0f} img/s. The matrix products are {gemm['share_of_step']:.0%} of the step at "
        f"{gemm['achieved_tflops']:.0f} TFLOP/s, {gemm['achieved_tflops'] / step['matmul_ceiling_tflops']:.0%} of "
        f"this card's measured bf16 ceiling ({step['matmul_ceiling_tflops']:.0f} TFLOP/s): at the ceiling they "
        f"would save {gemm['device_ms_per_step'] - at_ceiling_ms:.1f} ms. The fused elementwise kernels (layer "
        f"norms, GELU and residual adds, over a residual stream autocast leaves in fp32, and the weights' casts) "
        f"are {elementwise['share_of_step']:.0%} ({elementwise['device_ms_per_step']:.1f} ms), bound by memory "
        f"bandwidth; attention (cuDNN's flash kernels over 197 tokens) is {attention['share_of_step']:.0%} at "
        f"{attention['achieved_tflops']:.0f} TFLOP/s; no kernel runs for "
        f"{rows['no kernel running']['share_of_step']:.0%} of the step. {TARGET_IMG_S} img/s at micro batch "
        f"{step['batch']} is {target_ms:.0f} ms a step: {step['step_ms'] - target_ms:.1f} ms less than here."
    )


@figure("h100-step-weights")
def h100_step_weights() -> str:
    rows = summary("h100-step-weights")
    body = [
        [
            r["variant"],
            r["residual_dtype"],
            f"{r['img_s']:.0f} ({r['img_s_min']:.0f}-{r['img_s_max']:.0f})",
            f"{r['step_ms']:.1f}",
            f"**{r['over_autocast']:.3f}**",
        ]
        for r in rows
    ]
    header = ["step", "residual stream", "img/s, median (range)", "ms a step", "over autocast"]
    return table(header, body, "llrrr")


@figure("h100-step-weights-says")
def h100_step_weights_says() -> str:
    rows = {r["variant"]: r for r in summary("h100-step-weights")}
    autocast, master, bound = rows["autocast"], rows["bf16-master"], rows["bf16"]
    target_ms = 1000 * autocast["batch"] / TARGET_IMG_S
    closed = (autocast["step_ms"] - master["step_ms"]) / (autocast["step_ms"] - target_ms)
    return (
        f"{autocast['device']}, micro batch {autocast['batch']}: bf16 weights with fp32 masters take "
        f"{autocast['step_ms'] - master['step_ms']:.1f} ms off autocast's {autocast['step_ms']:.1f} ms step "
        f"({master['over_autocast']:.3f}x, {master['img_s']:.0f} img/s), nearly all of what bf16 alone gives "
        f"({bound['over_autocast']:.3f}x): the master copy costs little when it is two foreach copies. "
        f"{TARGET_IMG_S} img/s is {target_ms:.0f} ms a step, so on this card bf16 weights close {closed:.0%} of the "
        "gap."
    )
