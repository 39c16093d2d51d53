"""What a trial may change for the whole process, put back when it ends (``ProcessState``).

A shared worker group's process runs trial after trial, so whatever one trial changes process-wide, the
next trial inherits, whatever its engine:

* DeepSpeed's ZeRO-3 replaces ``torch.nn.functional.linear`` with its memory-efficient linear (an
  autograd function of its own) and leaves it there for the process's life: every later trial ran its
  ``nn.Linear`` layers through DeepSpeed's function.  Its ``zero.Init`` context replaces more (module
  ``apply``, ``__init_subclass__``, tensor construction) and puts those back on exit; a trial that
  fails inside it would not.
* torch's math flags: ``set_math_modes`` sets TF32 for fp32 and tf32 trials only, so a bf16 trial
  after a tf32 one kept TF32 on; an engine or model may set the others.
* torch's module hooks of every module (``register_module_forward_hook`` and its kin).

``capture`` before a trial and ``restore`` after it leave the next trial the process the trial found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.modules.module as module_hooks

# (owner, attribute) pairs that libraries replace process-wide, read from the owner's own namespace (an
# inherited attribute is absent there: a replacement set on the owner is deleted again).
PATCHED_ATTRIBUTES: tuple[tuple[Any, str], ...] = (
    (torch.nn.functional, "linear"),
    (torch.nn.functional, "embedding"),
    (torch.nn.Module, "apply"),
    (torch.nn.Module, "__init_subclass__"),
    (torch.Tensor, "__new__"),
    *((torch, name) for name in ("empty", "zeros", "ones", "full", "tensor", "arange", "randn", "rand")),
)

ABSENT = object()  # an attribute the owner inherits rather than holds

# torch's registries of hooks that every module runs (``torch.nn.modules.module._global_*``).
HOOK_REGISTRIES: tuple[str, ...] = tuple(
    name for name in dir(module_hooks) if name.startswith("_global_") and isinstance(getattr(module_hooks, name), dict)
)


@dataclass(frozen=True)
class Flag:
    get: Callable[[], Any]
    set: Callable[[Any], None]


def _setter(owner: Any, name: str) -> Callable[[Any], None]:
    return lambda value: setattr(owner, name, value)


# Restored in this order: the matmul precision before TF32, which sets the precision too.
FLAGS: dict[str, Flag] = {
    "float32_matmul_precision": Flag(torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
    "cuda.matmul.allow_tf32": Flag(
        lambda: torch.backends.cuda.matmul.allow_tf32, _setter(torch.backends.cuda.matmul, "allow_tf32")
    ),
    "cuda.matmul.allow_bf16_reduced_precision_reduction": Flag(
        lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        _setter(torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction"),
    ),
    "cuda.matmul.allow_fp16_reduced_precision_reduction": Flag(
        lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        _setter(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction"),
    ),
    "cudnn.allow_tf32": Flag(lambda: torch.backends.cudnn.allow_tf32, _setter(torch.backends.cudnn, "allow_tf32")),
    "cudnn.benchmark": Flag(lambda: torch.backends.cudnn.benchmark, _setter(torch.backends.cudnn, "benchmark")),
    "cudnn.deterministic": Flag(
        lambda: torch.backends.cudnn.deterministic, _setter(torch.backends.cudnn, "deterministic")
    ),
    "deterministic_algorithms": Flag(torch.are_deterministic_algorithms_enabled, torch.use_deterministic_algorithms),
    "default_dtype": Flag(torch.get_default_dtype, torch.set_default_dtype),
    "grad_enabled": Flag(torch.is_grad_enabled, torch.set_grad_enabled),
    "anomaly_detection": Flag(torch.is_anomaly_enabled, torch.set_anomaly_enabled),
}


@dataclass(frozen=True)
class ProcessState:
    """The process-wide torch state a trial can change: patched functions, global module hooks, math flags."""

    attributes: dict[tuple[Any, str], Any]
    hooks: dict[str, dict]
    flags: dict[str, Any]

    @classmethod
    def capture(cls) -> ProcessState:
        return cls(
            attributes={(owner, name): vars(owner).get(name, ABSENT) for owner, name in PATCHED_ATTRIBUTES},
            hooks={name: dict(getattr(module_hooks, name)) for name in HOOK_REGISTRIES},
            flags={name: flag.get() for name, flag in FLAGS.items()},
        )

    def restore(self) -> None:
        """Put back what differs from the capture (only that: setting a flag to its value is not free of effects)."""
        for (owner, name), value in self.attributes.items():
            if vars(owner).get(name, ABSENT) is value:
                continue
            if value is ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
        for name, saved in self.hooks.items():
            registry = getattr(module_hooks, name)
            if registry != saved:
                registry.clear()
                registry.update(saved)
        for name, value in self.flags.items():
            if FLAGS[name].get() != value:
                FLAGS[name].set(value)
