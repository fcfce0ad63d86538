"""What differs between the CUDA and the C++ lowering of the same arithmetic."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from ..orchestration.tier import SM_REGISTERS

# Threads per block of Tier 1 kernels, also the lane stride of their shared-memory slots. Blocks
# of one warp release their SM resources warp by warp, so a warp that finishes early (fewer
# primitive quartets) frees its registers and slots for the next block without waiting for
# the rest of a larger block.
TIER1_THREADS = 32
TIER1_MAX_SHARED_BYTES = 227 * 1024  # dynamic shared memory of one block (sm_90)

# GPU store launches keep integral k of item q at ((q / TILE) * nout + k) * TILE + q % TILE: the
# 32 items of a warp write 256 contiguous bytes per integral, and one thread's integrals lie a
# constant 256 bytes apart, so each store of a generated kernel addresses one base register
# plus an immediate offset. With the integrals at k * n + q every store would compute its
# address (an integer multiply-add and a constant-bank load per integral).
OUTPUT_TILE = 32


def tiled_output_index(k: str, q: str, nout: str) -> str:
    """C expression of the tiled position of integral ``k`` of item ``q`` (``OUTPUT_TILE``)."""
    tile = OUTPUT_TILE
    return f"(((size_t)({q}) / {tile}) * ({nout}) + ({k})) * {tile} + (({q}) % {tile})"


def tiled_output_size(n_items: int, n_outputs: int) -> int:
    """Doubles of a tiled output buffer: whole tiles of ``OUTPUT_TILE`` items."""
    return -(-n_items // OUTPUT_TILE) * OUTPUT_TILE * n_outputs


def untile_outputs(buffer: np.ndarray, n_outputs: int) -> np.ndarray:
    """(items rounded up to whole tiles, ``n_outputs``) view of a tiled output buffer."""
    tiles = buffer.reshape(-1, n_outputs, OUTPUT_TILE)
    return tiles.transpose(0, 2, 1).reshape(-1, n_outputs)


class Epilogue(str, enum.Enum):
    STORE = "store"  # integrals to an output buffer (verification, benchmarks)
    JK = "jk"  # contract with a density matrix into half J and K matrices
    GRAD = "grad"  # derivative classes: contract with densities into per-atom energy gradients


@dataclass(frozen=True)
class Target:
    name: str
    inline_fn: str
    noinline_fn: str
    kernel: str
    quartet_begin: str
    quartet_end: str
    buffer_index: str  # BUF(s): slot s of this thread's lane of the slot bank
    output_index: str  # OUT(k): output element k of quartet q
    atomic_add: str  # ATOMIC(x, v)
    slot_index: str  # SACC(s): Tier 1 slot s of this thread (see ``placement``)
    rsqrt: str  # RSQRT(x): 1 / sqrt(x)
    # MUL(a, x), FMA(a, x, s) = a * x + s and ADD(s, x), each rounded as written: a statement
    # is one chain of them in the order the lowering chose, which the compiler keeps
    mul: str
    fma: str
    add: str

    def launch_bounds(self, registers: int) -> str:
        """Qualifier holding a Tier 1 kernel to ``registers`` per thread: blocks of
        ``TIER1_THREADS`` and as many resident blocks per SM as the registers allow."""
        if self.name == "cpp":
            return ""
        return f"__launch_bounds__({TIER1_THREADS}, {SM_REGISTERS // (TIER1_THREADS * registers)}) "

    def tier1_slots(self, n_slots: int, ordered_reads: bool) -> list[str]:
        """Declarations of this thread's ``n_slots`` Tier 1 slots: ``SACC(s)`` reads slot s,
        ``SET_SACC(s, v)`` writes it. Every write stays where the generator put it; otherwise
        the compiler promotes the slots back to registers across the loops and spills them.
        Reads are ``ordered_reads`` too (volatile) or plain: ptxas may then issue a read as
        early as its slot's last write allows, overlapping its latency with other work, at the
        price of the registers that hold what it read early."""
        assign = "#define SET_SACC(s, v) (SACC(s) = (v))"
        if self.name == "cpp":
            return [f"double frcg_lane[{n_slots}];", assign]
        if ordered_reads:
            return [
                "extern __shared__ double frcg_slots[];",
                "volatile double* const frcg_lane = frcg_slots + threadIdx.x;",
                assign,
            ]
        # the write is an opaque shared-memory store: the compiler front end can neither drop
        # nor forward it (which would keep its value in a register until a later read) and
        # ptxas, seeing plain loads and stores off one base register, still orders each read
        # after its own slot's write only
        offset = 8 * TIER1_THREADS
        return [
            "extern __shared__ double frcg_slots[];",
            "const double* const frcg_lane = frcg_slots + threadIdx.x;",
            "const unsigned frcg_lane_addr = (unsigned)__cvta_generic_to_shared(frcg_lane);",
            '#define SET_SACC(s, v) asm volatile("st.shared.f64 [%0], %1;" :: '
            f'"r"(frcg_lane_addr + (s) * {offset}), "d"(v) : "memory")',
        ]

    def load_row(self, pointer: str, names: tuple[str, ...]) -> list[str]:
        """``const double`` declarations of ``names[i] = pointer[i]``. On the GPU the row is
        16-byte aligned and read two values per load: the threads of a warp read rows far
        apart, and each load instruction then costs one cache access per thread."""
        if self.name == "cpp":
            return [f"const double {x} = {pointer}[{i}];" for i, x in enumerate(names)]
        lines = []
        for i in range(0, len(names), 2):
            lines.append(f"const double2 {pointer}{i} = *(const double2*)({pointer} + {i});")
            pair = f"{names[i]} = {pointer}{i}.x, {names[i + 1]} = {pointer}{i}.y"
            lines.append(f"const double {pair};")
        return lines

    def row_buffer(self, buffer: str, pointer: str, width: int) -> list[str]:
        """A row of ``width`` doubles read from ``pointer`` into ``buffer`` (declared here): two
        values per 16-byte load on the GPU."""
        cpp = self.name == "cpp"
        declaration = f"double {buffer}[{width}];" if cpp else f"double2 {buffer}[{width // 2}];"
        return [declaration, *self.row_load(buffer, pointer, width)]

    def row_load(self, buffer: str, pointer: str, width: int) -> list[str]:
        """The row at ``pointer`` into the existing ``buffer``."""
        if self.name == "cpp":
            return [f"for (int i = 0; i < {width}; ++i) {buffer}[i] = {pointer}[i];"]
        return [
            f"{buffer}[{i}] = *(const double2*)({pointer} + {2 * i});" for i in range(width // 2)
        ]

    def row_fields(self, buffer: str, names: tuple[str, ...]) -> list[str]:
        """``const double`` copies of a row buffer's values, so that the buffer can take the
        next row while these are in use."""
        if self.name == "cpp":
            values = [f"{buffer}[{i}]" for i in range(len(names))]
        else:
            values = [f"{buffer}[{i // 2}].{'xy'[i % 2]}" for i in range(len(names))]
        return ["const double " + ", ".join(f"{n} = {v}" for n, v in zip(names, values)) + ";"]

    def prelude(self) -> str:
        return "\n".join(
            [
                f"#define BUF(s) bank[{self.buffer_index}]",
                f"#define OUT(k) out[{self.output_index}]",
                f"#define ATOMIC(x, v) {self.atomic_add}",
                f"#define SACC(s) frcg_lane[{self.slot_index}]",
                f"#define RSQRT(x) {self.rsqrt}",
                f"#define MUL(a, x) {self.mul}",
                f"#define FMA(a, x, s) {self.fma}",
                f"#define ADD(s, x) {self.add}",
                "#define DM(i, j) dm_[(size_t)(i) * nao + (j)]",
            ]
        )


CUDA = Target(
    name="cuda",
    inline_fn="static __device__ __forceinline__",
    noinline_fn="static __device__ __noinline__",
    kernel='extern "C" __global__ void',
    quartet_begin="const int q = blockIdx.x * blockDim.x + threadIdx.x;\nif (q >= n) return;\n{",
    quartet_end="}",
    # interleaved: consecutive threads touch consecutive addresses (coalesced, and free of
    # bank conflicts when the slot bank is in shared memory)
    buffer_index="(size_t)(s) * bank_stride + lane",
    output_index=tiled_output_index("k", "q", "nout"),
    atomic_add="atomicAdd(&(x), (v))",
    # a compile-time lane stride: slot addresses are immediate offsets from one register
    slot_index=f"(s) * {TIER1_THREADS}",
    rsqrt="rsqrt(x)",
    # the builtins behind __dmul_rn, __fma_rn and __dadd_rn: the same PTX, but without a
    # wrapper to inline per operation cicc takes half the time on the largest Tier 2 kernels
    mul="__nvvm_mul_rn_d((a), (x))",
    fma="__nvvm_fma_rn_d((a), (x), (s))",
    add="__nvvm_add_rn_d((s), (x))",
)

CPP = Target(
    name="cpp",
    inline_fn="static inline",
    noinline_fn="static __attribute__((noinline))",
    kernel='extern "C" void',
    quartet_begin="for (int q = 0; q < n; ++q) {",
    quartet_end="}",
    # one quartet's slots are contiguous on the CPU (cache locality)
    buffer_index="(size_t)lane * bank_stride + (s)",
    output_index="(size_t)q * nout + (k)",
    atomic_add="((x) += (v))",
    slot_index="s",
    rsqrt="(1.0 / sqrt(x))",
    # a product and a sum rounded apart, as the host compiler does without FMA instructions
    mul="((a) * (x))",
    fma="((a) * (x) + (s))",
    add="((s) + (x))",
)

TARGETS = {t.name: t for t in (CUDA, CPP)}
