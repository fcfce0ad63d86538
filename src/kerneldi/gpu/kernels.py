"""The block-pair kernels of ``kernels.cu``: instantiation names, shared-memory sizes,
compilation through CuPy's NVRTC and an nvcc check."""

from __future__ import annotations

import dataclasses
import functools
import tempfile
from pathlib import Path

import qctoolchain

from ..errors import SettingsError, compiler_errors
from ..settings import Settings

SOURCE = Path(__file__).with_name("kernels.cu")
NT = 256  # threads per block, KD_NT in the source
NWARP = NT // 32
XC_CODES = {"LDA": 0, "GGA": 1, "MGGA": 2}
MMA_CODES = {"fp64": 0, "fp64-tc": 1, "fp16-tc": 2}
SMEM_DEFAULT = 48 * 1024


def _align(nbytes: int) -> int:
    return (nbytes + 127) // 128 * 128


def resolve(settings: Settings, device) -> Settings:
    """``settings`` with its "auto" product mode and staging resolved for ``device`` (see
    Settings), checked against the kernels that exist."""
    mma = settings.mma
    if mma == "auto":
        mma = "fp64-tc" if settings.block_size == 32 and device.fp64_tensor_cores() else "fp64"
    staging = settings.staging
    if staging == "auto":
        # Settings admits only known modes, so MMA_CODES has every resolved one
        staging = "async" if tensor_core_kernels(settings.block_size, MMA_CODES[mma]) else "sync"
    # "auto" potential tiles depend on the blocks kept: the engine picks them (potential_tiles)
    check_supported(settings.block_size, mma, settings.tiling, staging, settings.potential_tiles)
    return dataclasses.replace(settings, mma=mma, staging=staging)


def potential_tiles(settings: Settings, retained_fraction: float) -> str:
    """The potential's output tiles per thread block for resolved ``settings``: "auto" is
    "2x2" where the grouped kernel exists and at least GROUPED_MIN_FILL[basis order] of the
    blocks are kept (where a group's pairs pass together often enough that staging each tile
    once for several products pays), else "1x1"."""
    if settings.potential_tiles != "auto":
        return settings.potential_tiles
    grouped = settings.tiling == "block" and tensor_core_kernels(
        settings.block_size, MMA_CODES[settings.mma]
    )
    fill = GROUPED_MIN_FILL[settings.basis_order]
    return "2x2" if grouped and retained_fraction >= fill else "1x1"


def check_supported(
    block_size: int, mma: str, tiling: str = "block", staging: str = "sync", tiles: str = "1x1"
) -> None:
    if mma not in MMA_CODES:
        raise SettingsError(f"mma must be one of {tuple(MMA_CODES)}, got {mma!r}")
    if tiles in GROUPS and not (
        tiling == "block" and tensor_core_kernels(block_size, MMA_CODES[mma])
    ):
        raise SettingsError(
            f"potential_tiles={tiles!r} takes tiling='block' and the FP64 tensor cores at "
            f"block_size 32, got tiling={tiling!r}, mma={mma!r}, block_size={block_size}"
        )
    if staging == "async" and not tensor_core_kernels(block_size, MMA_CODES[mma]):
        raise SettingsError(
            f"staging='async' takes the FP64 tensor cores at block_size 32, "
            f"got mma={mma!r}, block_size={block_size}"
        )
    if tiling == "warp" and not tensor_core_kernels(block_size, MMA_CODES[mma]):
        raise SettingsError(
            f"tiling='warp' takes the FP64 tensor cores at block_size 32, "
            f"got mma={mma!r}, block_size={block_size}"
        )
    if mma == "fp64" and block_size not in (16, 32, 64):
        raise SettingsError(f"the GPU kernels take block_size 16, 32 or 64, got {block_size}")
    if mma != "fp64" and block_size != 32:
        raise SettingsError(f"the tensor-core kernels take block_size 32, got {block_size}")


def density_smem(
    xc: int, d: int, mma: int, orbitals: bool = False, two_buffers: bool = False
) -> int:
    """Bytes of dynamic shared memory of kd_density, or of kd_density_orb with ``orbitals``;
    ``two_buffers`` for the asynchronous staging (mirrors the layout in the source)."""
    esz = 2 if mma == 2 else 8
    ldn = d + 4 if mma == 1 else d
    nrho = (1, 4, 5)[xc]
    nright = (1 if xc == 0 else 4) if orbitals else (4 if xc == 2 else 1)
    left, right = _align(d * ldn * esz), _align(nright * d * ldn * esz)
    region = max(nright * d * ldn * 8, nrho * NT * 8)  # R tiles, then the reduction
    end = max((2 if two_buffers else 1) * (left + right), left + _align(region))
    # the tensor-core modes sum partial tiles in a scratch of d x d doubles (or 2 of floats)
    return end + (_align(d * d * 8) if mma else 0)


def potential_smem(d: int, mma: int) -> int:
    """Bytes of dynamic shared memory of kd_potential (mirrors the layout in the source)."""
    esz = 2 if mma == 2 else 8
    lds = (d + 1, d + 4, d)[mma]
    four = 4 * _align(d * lds * esz)  # two buffers of (left, right)
    base = four if four > d * d * 8 else _align(d * d * 8)
    return base + (_align(d * d * 8) if mma else 0)


# output tiles per side of the thread block's group in kd_potential_group
GROUPS = {"2x2": 2, "4x4": 4}
# kept share of the blocks from which "auto" groups the potential's tiles, per basis order. A
# group saves loads only where most of its pairs pass together; otherwise scanning the group
# costs more than the loads it saves. The support order puts functions of one reach side by
# side, so the pairs of a 2 x 2 group pass together even on sparse operands; under the other
# orders they do only where most blocks are kept.
GROUPED_MIN_FILL = {"support": 0.2, "cluster": 0.6, "input": 0.6}


def potential_group_smem(g: int) -> int:
    """kd_potential_group: three stages of g left and g right tiles of 32 x 32 doubles and 32
    grid weights."""
    return 3 * (2 * g * 32 * 32 + 32) * 8


# the warp-tiled kernels' slices, 8 warps: kd_potential_warp (left, right) half tiles of 32 x 20
# doubles; kd_density_orb_warp a 32 x 20 and a 16 x 36 half tile
POTENTIAL_WARP_SMEM = 8 * 2 * 32 * 20 * 8
DENSITY_WARP_SMEM = 8 * (32 * 20 + 16 * 36) * 8


def tensor_core_kernels(d: int, mma: int) -> bool:
    """Whether the kernels written for the FP64 tensor cores at d = 32 exist for (d, mma): the
    asynchronous density staging, the warp tiles and the grouped potential."""
    return d == 32 and mma == MMA_CODES["fp64-tc"]


def names(d: int, mma: int) -> list[str]:
    out = [f"kd_aow<{d}>", f"kd_ao_norms<{d}>", f"kd_ao_gather<{d}>"]
    for xc in XC_CODES.values():
        for staged in (0, 1) if tensor_core_kernels(d, mma) else (0,):
            out += [
                f"kd_density<{xc},{d},{mma},{staged}>",
                f"kd_density_orb<{xc},{d},{mma},{staged}>",
            ]
        out.append(f"kd_potential<{xc},{d},{mma}>")
        if tensor_core_kernels(d, mma):
            out += [f"kd_density_orb_warp<{xc}>", f"kd_potential_warp<{xc}>"]
            out += [f"kd_potential_group<{xc},{g}>" for g in GROUPS.values()]
    return out


def smem_bytes(expr: str, d: int, mma: int) -> int:
    """Dynamic shared memory of the instantiation ``expr`` (a name from ``names``)."""
    kernel = expr.split("<")[0]
    if kernel == "kd_potential_warp":
        return POTENTIAL_WARP_SMEM
    if kernel == "kd_potential_group":
        return potential_group_smem(int(expr.split(",")[1].rstrip(">")))
    if kernel == "kd_density_orb_warp":
        return DENSITY_WARP_SMEM
    if kernel in ("kd_density", "kd_density_orb"):
        xc, _, _, staged = (int(a) for a in expr.split("<")[1].rstrip(">").split(","))
        return density_smem(xc, d, mma, kernel == "kd_density_orb", two_buffers=staged == 1)
    if kernel == "kd_potential":
        return potential_smem(d, mma)
    return 0


@functools.cache
def module(d: int, mma: str) -> dict:
    """The compiled kernels of one block size and product mode: {name: (RawKernel, smem)}."""
    check_supported(d, mma)
    m = MMA_CODES[mma]
    wanted = names(d, m)
    with compiler_errors():
        mod = qctoolchain.nvrtc_module(SOURCE.read_text(), SOURCE.name, name_expressions=wanted)
    kernels = {}
    for name in wanted:
        k = mod.get_function(name)
        smem = smem_bytes(name, d, m)
        if smem > SMEM_DEFAULT:
            k.max_dynamic_shared_size_bytes = smem
        kernels[name] = (k, smem)
    return kernels


def nvcc_check(arch: str = "sm_90", out_dir: str | Path | None = None) -> str:
    """Compile every instantiation with nvcc (no GPU needed); returns nvcc's output, ptxas's
    report of every kernel included."""
    refs = []
    for mma in MMA_CODES:
        for d in (16, 32, 64) if mma == "fp64" else (32,):
            refs += [f"(void*)&{n}" for n in names(d, MMA_CODES[mma])]
    body = SOURCE.read_text() + "\nvoid* kd_instances[] = {" + ", ".join(refs) + "};\n"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kd_check.cu"
        src.write_text(body)
        out = Path(out_dir or tmp) / "kd_check.cubin"
        with compiler_errors():
            return qctoolchain.nvcc_cubin(src, out, arch, ("-std=c++17",), SOURCE.name).log
