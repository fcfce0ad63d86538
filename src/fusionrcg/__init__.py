"""FusionRCG: generated Head-Gordon-Pople electron repulsion integrals.

The recurrence graph of a shell-quartet class (``graph``), its orchestration (``orchestration``:
evaluation order, liveness, tier, buffer slots) and its execution (``reference`` now; generated
CUDA and C++ later) are separate stages. ``shell_quartet_eri`` is the entry point.
"""

from .angmom import LMAX, ClassError, QuartetClass, canonical_classes
from .engine import BackendError, eri_quartets, shell_quartet_eri
from .jk import JK, apply
from .orchestration.plan import ClassPlan, plan_class
from .shells import ShellError
from .variants import VARIANTS, Tier, Variant, VariantError, get_variant

__all__ = [
    "LMAX",
    "VARIANTS",
    "BackendError",
    "ClassError",
    "ClassPlan",
    "JK",
    "QuartetClass",
    "ShellError",
    "Tier",
    "Variant",
    "VariantError",
    "apply",
    "canonical_classes",
    "eri_quartets",
    "get_variant",
    "plan_class",
    "shell_quartet_eri",
]
