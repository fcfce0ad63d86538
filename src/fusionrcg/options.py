"""Kernel options: every choice that decides a generated kernel besides its class, output
basis, epilogue, target and architecture.

``KernelOptions`` is frozen and hashable; it keys the kernel library's index (with the class
and the rest of the request) and serialises to JSON (``to_json``, ``from_json``) so that a
benchmark record names exactly what it measured. ``PRESETS`` holds the options of each named
variant with every other knob at its default; studies derive theirs with
``dataclasses.replace`` instead of patching module constants.

The three Tier 1 form choices (``register_target``, ``ordered_slot_reads``,
``arrival_order``) are ``None`` by default: the library then tries both values in its order
until ptxas reports no spills (``library.store``); a value fixes the choice.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import asdict, dataclass
from typing import Any

from qctoolchain import PTXAS_DEFAULT_LEVEL, PTXAS_LEVELS

from .angmom import QuartetClass
from .errors import OptionsError
from .graph.axis import AxisPolicy
from .lowering.block import BLOCK_MAX_THREADS
from .lowering.kernel import (
    BANKS,
    GENERATED_KERNEL2_MAX_OUTPUTS,
    PHASE2_COMPILED_MAX,
    PREFETCH_MAX_ACCUMULATORS,
)
from .lowering.layout import DEFAULT_SEGMENT_SIZE
from .orchestration.plan import DEFAULT_MODEL, ClassPlan, plan_class
from .orchestration.schedule import OrderKind
from .orchestration.tier import RegisterModel
from .variants import VARIANTS, Tier, Variant, get_variant


@dataclass(frozen=True)
class KernelOptions:
    variant: Variant = VARIANTS["full"]
    """Graph and orchestration parameters: axis policy, evaluation order, spherical fusion,
    forced tier."""
    model: RegisterModel = DEFAULT_MODEL
    """Register model: the tier, Tier 1's register budgets, occupancy target and the denser
    placements."""
    segment_size: int = DEFAULT_SEGMENT_SIZE
    """Tier 2: statements per VRR segment function and Phase 2 entries per function."""
    bank: str = "auto"
    """Tier 2's slot bank: "shared", "global", or "auto" (shared memory where a warp's bank
    fits, ``lowering.kernel.shared_bank``)."""
    register_target: bool | None = None
    """Tier 1 store: held to the model's register target (True) or at the full budget."""
    ordered_slot_reads: bool | None = None
    """Tier 1: shared-memory slots read in program order (True) or as early as ptxas likes."""
    arrival_order: bool | None = None
    """Each statement sums its terms in the order their values become available (True) or in
    graph order."""
    spill_fallbacks: bool = True
    """Tier 1: walk the forms (the open choices above) until one compiles without spills;
    False builds the first form only."""
    denser_placements: bool = True
    """Tier 1 store: after a spill-free build, take the first of the plan's denser placements
    that compiles without spills too (more warps per SM)."""
    ptxas_level: int = PTXAS_DEFAULT_LEVEL
    """ptxas optimization level of CUDA builds."""
    prefetch_max_accumulators: int = PREFETCH_MAX_ACCUMULATORS
    """Classes with at most this many accumulators read the next ket pair row ahead."""
    phase2_compiled_max: int = PHASE2_COMPILED_MAX
    """Longest Tier 2 Phase 2 program lowered as code; longer ones are interpreted."""
    generated_kernel2_max_outputs: int = GENERATED_KERNEL2_MAX_OUTPUTS
    """Tier 2 CUDA kernels of classes with at most this many integrals carry a generated
    Kernel 2."""
    omega: float = 0.0
    """The operator: 0 the Coulomb operator 1/r, > 0 the long-range erf(omega r)/r of
    range-separated functionals."""
    warp_bra_j: bool = True
    """CUDA Tier 1 J/K epilogue: the J_ab updates of a warp whose items share one bra pair are
    summed across the warp and added once (False: each thread's own atomic update)."""
    item_threads: int = 1
    """Tier 2: threads per work item. 1 builds the straight-line kernel (one item per thread);
    more builds the block form (one block of this many threads per item over the class's
    level program, ``lowering.block``), for launches of few items. Tier 1 ignores it."""

    def __post_init__(self) -> None:
        if not isinstance(self.variant, Variant):
            raise OptionsError(f"variant must be a Variant, got {self.variant!r}")
        if self.bank not in BANKS:
            raise OptionsError(f"unknown slot bank {self.bank!r}; one of {', '.join(BANKS)}")
        if self.ptxas_level not in PTXAS_LEVELS:
            raise OptionsError(f"ptxas level {self.ptxas_level!r} is not one of {PTXAS_LEVELS}")
        for name in ("segment_size",):
            if getattr(self, name) < 1:
                raise OptionsError(f"{name} must be positive, got {getattr(self, name)!r}")
        for name in ("prefetch_max_accumulators", "phase2_compiled_max",
                     "generated_kernel2_max_outputs"):  # fmt: skip
            if getattr(self, name) < 0:
                raise OptionsError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if not (self.omega >= 0.0 and math.isfinite(self.omega)):
            raise OptionsError(f"omega must be a finite number >= 0, got {self.omega!r}")
        if self.item_threads != 1 and not (
            32 <= self.item_threads <= BLOCK_MAX_THREADS and self.item_threads % 32 == 0
        ):
            raise OptionsError(
                f"item_threads must be 1 or a multiple of 32 up to {BLOCK_MAX_THREADS}, "
                f"got {self.item_threads!r}"
            )

    def replace(self, **changes: Any) -> KernelOptions:
        """These options with ``changes``; ``variant`` may be given by name."""
        if "variant" in changes:
            changes["variant"] = get_variant(changes["variant"])
        return dataclasses.replace(self, **changes)

    def plan(self, cls: QuartetClass, spherical: bool = True) -> ClassPlan:
        """The orchestrated class these options lower. The default model is not passed on, so
        that these plans are the ones ``plan_class`` caches for the engine's other callers."""
        if self.model == DEFAULT_MODEL:
            return plan_class(cls, self.variant, spherical)
        return plan_class(cls, self.variant, spherical, self.model)

    def lowering(self) -> dict[str, Any]:
        """Keyword arguments of ``lowering.kernel.lower`` that these options set (the Tier 1
        form is the library's: ``library.store``)."""
        return {
            "segment_size": self.segment_size,
            "bank": self.bank,
            "prefetch_max_accumulators": self.prefetch_max_accumulators,
            "phase2_compiled_max": self.phase2_compiled_max,
            "generated_kernel2_max_outputs": self.generated_kernel2_max_outputs,
            "omega": self.omega,
            "warp_bra_j": self.warp_bra_j,
        }

    def to_json(self) -> dict[str, Any]:
        """A JSON-compatible dict; ``from_json`` gives these options back."""
        out = asdict(self)
        v = self.variant
        out["variant"] = {
            "name": v.name,
            "axis": v.axis.value,
            "order": v.order.value,
            "spherical_fusion": v.spherical_fusion,
            "forced_tier": None if v.forced_tier is None else int(v.forced_tier),
            "description": v.description,
        }
        out["model"] = {k: list(x) if isinstance(x, tuple) else x for k, x in out["model"].items()}
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> KernelOptions:
        data = dict(data)
        v = dict(data.pop("variant"))
        tier = v.pop("forced_tier")
        variant = Variant(
            name=v.pop("name"),
            axis=AxisPolicy(v.pop("axis")),
            order=OrderKind(v.pop("order")),
            spherical_fusion=bool(v.pop("spherical_fusion")),
            forced_tier=None if tier is None else Tier(tier),
            description=v.pop("description"),
        )
        model = {k: tuple(x) if isinstance(x, list) else x for k, x in data.pop("model").items()}
        try:
            return cls(variant=variant, model=RegisterModel(**model), **data)
        except TypeError as exc:
            raise OptionsError(f"not a kernel-options record: {exc}") from None

    def key(self) -> str:
        """A hash of the JSON form: equal for equal options in any process."""
        text = json.dumps(self.to_json(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]


PRESETS: dict[str, KernelOptions] = {name: KernelOptions(variant=v) for name, v in VARIANTS.items()}


def kernel_options(options: str | Variant | KernelOptions = "full") -> KernelOptions:
    """Options from a preset name (a variant's), a variant (everything else at its default)
    or options (as they are)."""
    if isinstance(options, KernelOptions):
        return options
    if isinstance(options, Variant):
        return KernelOptions(variant=options)
    return PRESETS[get_variant(options).name]
