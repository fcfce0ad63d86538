"""FusionRCG: generated Head-Gordon-Pople electron repulsion integrals.

The recurrence graph of a shell-quartet class (``graph``), its orchestration (``orchestration``:
evaluation order, liveness, tier, buffer slots), its lowering to CUDA and C++ (``lowering``), the
kernel library that builds and indexes the kernels (``library``) and the executors that launch
them (``runtime``) are separate stages. ``shell_quartet_eri`` and ``eri_quartets`` are the entry
points, ``eri_deriv_quartets`` their first-derivative form. ``KernelOptions`` (``options``)
carries every choice of a generated kernel; every error the engine raises on purpose derives
from ``FusionRCGError`` (``errors``).
"""

from .angmom import LMAX, QuartetClass, canonical_classes
from .engine import eri_deriv_quartets, eri_quartets, shell_quartet_eri
from .errors import (
    BackendError,
    ClassError,
    CompileError,
    CompileTimeout,
    DeviceError,
    FusionRCGError,
    InputError,
    OptionsError,
    PlanError,
    ShellError,
    VariantError,
)
from .jk import JK, apply
from .options import PRESETS, KernelOptions, kernel_options
from .orchestration.plan import ClassPlan, plan_class
from .variants import VARIANTS, Tier, Variant, get_variant

__all__ = [
    "LMAX",
    "VARIANTS",
    "BackendError",
    "ClassError",
    "ClassPlan",
    "CompileError",
    "CompileTimeout",
    "DeviceError",
    "FusionRCGError",
    "InputError",
    "JK",
    "KernelOptions",
    "OptionsError",
    "PRESETS",
    "PlanError",
    "QuartetClass",
    "ShellError",
    "Tier",
    "Variant",
    "VariantError",
    "apply",
    "canonical_classes",
    "eri_deriv_quartets",
    "eri_quartets",
    "get_variant",
    "kernel_options",
    "plan_class",
    "shell_quartet_eri",
]
