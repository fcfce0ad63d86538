"""Engine settings: block size, thresholds, orderings, GPU product mode, AO caching."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .errors import SettingsError
from .forms import DENSITY_FORMS, ORBITAL_ROTATIONS

LEAF_ORDERS = ("auto", "optimal", "greedy")
GRID_ORDERS = ("morton", "input")
# basis order: clustered grid-support signatures ("support"), the paper's clustered overlap rows
# ("cluster"), or PySCF's order ("input"); see ordering.py
BASIS_ORDERS = ("support", "cluster", "input")
# GPU block-pair products: FP64 on the CUDA cores, FP64 on the tensor cores (DMMA),
# or the paper's FP16-input / FP32-accumulate tensor-core mode; "auto" is FP64 on the tensor
# cores where the GPU has them (compute capability 8.0 on) and d = 32, FP64 on the CUDA cores
# otherwise (same accuracy at twice the peak FP64 rate of the CUDA cores).
MMA_MODES = ("auto", "fp64", "fp64-tc", "fp16-tc")
AO_CACHE = ("auto", "always", "never")
# GPU products: the whole thread block on one d x d tile step ("block"), or each warp on its own
# steps into a 32 x 32 output of its own ("warp": the potential and the orbital-form density;
# FP64 tensor cores, d = 32)
TILINGS = ("block", "warp")
# how the density kernels stage their operands in shared memory: converted on the way through
# registers into one buffer ("sync"), or copied asynchronously into two alternating buffers so
# that the next product's loads overlap the current one ("async"; FP64 tensor cores, d = 32);
# "auto" is "async" where it exists (the loads overlap the products instead of waiting for
# them) and "sync" otherwise
STAGINGS = ("auto", "sync", "async")
# output tiles per thread block of the potential (tiling "block"): one d x d tile ("1x1"), or a
# 2 x 2 or 4 x 4 group of them (FP64 tensor cores, d = 32) whose steps stage each left and right
# tile the group's passing pairs need once, up to G^2 products from 2G tiles (the same pairs);
# "auto" is "2x2" where it exists and enough of the blocks are kept (20% under the support basis
# order, 60% under the others; gpu/kernels.py), "1x1" otherwise
POTENTIAL_TILES = ("auto", "1x1", "2x2", "4x4")


@dataclass(frozen=True)
class Settings:
    """How the engine blocks, filters and multiplies.

    ``t_b`` is the block-retention threshold (Eq. 12) and ``t_d`` the block-pair threshold
    (Eq. 17); ``block_size`` is d. ``leaf_order="auto"`` uses SciPy's optimal leaf ordering
    up to ``optimal_leaf_max`` basis functions and the merge-time orientation of the paper's
    Appendix A-B2 above that (the optimal ordering grows roughly as n^4). ``density_form``
    picks R = D Phi or R = C^T Phi from the occupied orbitals a tagged density matrix carries
    (``forms.py``; "auto" by the estimated block products); ``orbital_rotation="cholesky"``
    turns those orbitals into Cholesky orbitals of D first, so that their tiles are sparse.
    """

    block_size: int = 32
    t_b: float = 1e-12
    t_d: float = 1e-12
    morton_resolution: float = 128.0
    grid_order: str = "morton"
    basis_order: str = "support"
    leaf_order: str = "auto"
    optimal_leaf_max: int = 1500
    mma: str = "auto"
    density_form: str = "auto"
    orbital_rotation: str = "cholesky"
    tiling: str = "block"
    staging: str = "auto"
    potential_tiles: str = "auto"
    ao_cache: str = "auto"
    # share of free memory the AO block cache may take (GPU), or its limit in MB (CPU)
    gpu_memory_fraction: float = 0.6
    cpu_cache_mb: float = 4000.0
    # a new geometry of the same molecule whose atoms all moved less than this (Bohr) keeps
    # the previous basis order (an MD step); 0 orders every geometry anew
    reuse_orders_bohr: float = 0.5
    # GPU backend: the grid's Morton order and the reordered grid made on the device from the
    # grid's device arrays (``layout.make_layout``) instead of on the host
    grid_order_on_device: bool = False

    def __post_init__(self):
        if not isinstance(self.block_size, int) or self.block_size < 1:
            raise SettingsError(f"block_size must be a positive integer, got {self.block_size!r}")
        for name in ("t_b", "t_d"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 <= value < 1):
                raise SettingsError(f"{name} must be a number in [0, 1), got {value!r}")
        if not self.morton_resolution > 0:
            raise SettingsError(f"morton_resolution must be > 0, got {self.morton_resolution!r}")
        for name, allowed in (
            ("grid_order", GRID_ORDERS),
            ("basis_order", BASIS_ORDERS),
            ("leaf_order", LEAF_ORDERS),
            ("mma", MMA_MODES),
            ("density_form", DENSITY_FORMS),
            ("orbital_rotation", ORBITAL_ROTATIONS),
            ("tiling", TILINGS),
            ("staging", STAGINGS),
            ("potential_tiles", POTENTIAL_TILES),
            ("ao_cache", AO_CACHE),
        ):
            if getattr(self, name) not in allowed:
                raise SettingsError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if not 0 < self.gpu_memory_fraction <= 0.95:
            raise SettingsError("gpu_memory_fraction must be in (0, 0.95]")
        if not self.cpu_cache_mb >= 0:
            raise SettingsError("cpu_cache_mb must be >= 0")
        if not self.reuse_orders_bohr >= 0:
            raise SettingsError("reuse_orders_bohr must be >= 0")
        if not isinstance(self.grid_order_on_device, bool):
            raise SettingsError(
                f"grid_order_on_device must be True or False, got {self.grid_order_on_device!r}"
            )

    def as_dict(self) -> dict:
        return asdict(self)
