"""The block form of Tier 2: one thread block per work item over the class's level program.

The kernel is short and the same for every class but for its prologue (the class's primitive
quantities and Boys order, ``kernel._loops_open``), its level boundaries and its slot count:
the statements come from the level program (``levels.level_program``), read from the kernel's
program arguments (``p2_*``) as the interpreted Tier 2 Phase 2 reads its own. Every thread of
a block computes the item's primitive quantities (a few hundred operations against the
hundreds of thousands of statements the block shares), thread 0 writes them and the Boys
leaves into the bank, then the block runs each level's statements strided over its threads,
with a barrier after each level.

The slot bank of an item is in shared memory where it fits in one block's (``bank`` "auto" or
"shared"), else in the global buffer, ``n_slots`` contiguous doubles per item; the item's
symbols (the quantities the program's codes index) follow its slots there. On the CPU the
same source runs one item at a time with one thread and no barriers.
"""

from __future__ import annotations

import dataclasses
import math

from ..errors import OptionsError
from ..graph import symbols as S
from ..orchestration.plan import ClassPlan
from ..variants import Tier
from .boys import boys_source
from .kernel import (
    BANKS,
    HRR_GEOMETRY,
    KERNEL_ARGS,
    LOOPS_CLOSE,
    KernelSource,
    _indent,
    _loops_open,
    _prologue,
    boys_values,
    kernel_name,
    primitive_fields,
)
from .layout import Phase2Program
from .levels import BLOCK_SYMBOLS, LevelProgram, level_program
from .target import TARGETS, TIER1_MAX_SHARED_BYTES, Epilogue, Target

BLOCK_MAX_THREADS = 1024
# a term's slot and symbol code share one int: the slot in the low CODE_SHIFT bits, the code
# above them (one load per term fewer in the levels' inner loop)
CODE_SHIFT = 24
SLOT_MASK = (1 << CODE_SHIFT) - 1


def packed_terms(program: Phase2Program) -> Phase2Program:
    """``program`` with each term's symbol code packed above its source slot in ``src``
    (``code`` kept as it is, unread by the block form)."""
    if program.src.size and (int(program.src.max()) > SLOT_MASK or int(program.src.min()) < 0):
        raise OptionsError(f"a block-form slot above {SLOT_MASK} cannot be packed with its code")
    if program.code.size and int(program.code.max()) >= 1 << (31 - CODE_SHIFT):
        raise OptionsError("a block-form symbol code too large to pack")
    return dataclasses.replace(program, src=program.src | (program.code << CODE_SHIFT))


def block_shared_bank(n_slots: int, target: Target, bank: str = "auto") -> bool:
    """Whether the block form keeps an item's ``n_slots`` slots in shared memory (CUDA only;
    ``bank`` "auto", "shared" or "global", as ``KernelOptions.bank``)."""
    if bank not in BANKS:
        raise OptionsError(f"unknown slot bank {bank!r}; one of {', '.join(BANKS)}")
    fits = 8 * n_slots <= TIER1_MAX_SHARED_BYTES
    if bank == "shared" and not fits:
        raise OptionsError(
            f"a bank of {n_slots} slots does not fit in {TIER1_MAX_SHARED_BYTES} bytes of "
            "shared memory per block"
        )
    return target.name == "cuda" and bank != "global" and fits


def _level_macro(target: Target) -> str:
    """``FRCG_LEVEL(lo, hi)``: statements lo..hi-1 strided over the block, then a barrier."""
    sync = "__syncthreads();" if target.name == "cuda" else ""
    lines = [
        "#define FRCG_LEVEL(lo, hi) do {",
        "for (int i_ = (lo) + tid; i_ < (hi); i_ += nth) {",
        "double s_ = 0.0;",
        "for (int t_ = p2_start[i_]; t_ < p2_start[i_ + 1]; ++t_) {",
        "    const int term_ = p2_src[t_];",
        f"    const double w_ = p2_coef[t_] * sym[term_ >> {CODE_SHIFT}];",
        f"    s_ = FMA(w_, bank[term_ & {SLOT_MASK:#x}], s_);",
        "}",
        "const int d_ = p2_dst[i_];",
        "if (d_ >= 0) bank[d_] = s_; else OUT(-d_ - 1) = s_;",
        "}",
        sync,
    ]
    return " \\\n    ".join(x for x in lines if x) + " \\\n} while (0)"


def _body(
    plan: ClassPlan,
    target: Target,
    levels: LevelProgram,
    shared: bool,
    prefetch_max_accumulators: int,
    omega: float,
) -> list[str]:
    """The kernel body. An item's bank holds its slots and, after them, its symbols
    (``BLOCK_SYMBOLS``): thread 0 writes the symbols and the Boys leaves, a barrier later
    every thread reads them (a per-thread array of symbols, indexed by the program's codes,
    would sit in each thread's local memory and be read from there for every term)."""
    cuda = target.name == "cuda"
    barrier = ["__syncthreads();"] if cuda else []
    n_acc = plan.n_accumulators
    stride = levels.n_slots + len(BLOCK_SYMBOLS)
    if cuda:
        lines = ["const int q = blockIdx.x;", "if (q >= n) return;", "{"]
        lines += ["const int tid = threadIdx.x, nth = blockDim.x;"]
        lines += (
            ["extern __shared__ double frcg_bank[];", "double* const bank = frcg_bank;"]
            if shared
            else [f"double* const bank = buf + (size_t)q * {stride};"]
        )
    else:
        lines = ["for (int q = 0; q < n; ++q) {", "const int tid = 0, nth = 1;"]
        lines.append(f"double* const bank = buf + (size_t)q * {stride};")
    lines += ["(void)stride; (void)p2_len;", *_prologue(plan)]
    lines.append(f"double* const sym = bank + {levels.n_slots};")
    n_sym = len(BLOCK_SYMBOLS)
    lines.append(f"if (tid == 0) for (int s = 0; s < {n_sym}; ++s) sym[s] = s ? 0.0 : 1.0;")
    base = levels.acc_base
    lines.append(f"for (int s = tid; s < {n_acc}; s += nth) bank[{base} + s] = 0.0;")
    lines += _loops_open(plan, target, None, prefetch_max_accumulators, omega, boys=False)
    code = {s: i for i, s in enumerate(BLOCK_SYMBOLS)}
    lines.append("if (tid == 0) {")
    lines += [f"sym[{code[f]}] = {f};" for f in primitive_fields(plan) if f in code]
    lines += boys_values(plan)
    lines.append(f"for (int m = 0; m <= {plan.cls.boys_order}; ++m) bank[m] = pref * F[m];")
    lines += ["}", *barrier]
    starts = levels.level_start
    lines += [f"FRCG_LEVEL({starts[i]}, {starts[i + 1]});" for i in range(levels.phase1_levels)]
    lines += LOOPS_CLOSE + HRR_GEOMETRY
    lines += ["if (tid == 0) {", *(f"sym[{code[s]}] = {s};" for s in (*S.AB, *S.CD)), "}"]
    lines += barrier
    lines += [
        f"FRCG_LEVEL({starts[i]}, {starts[i + 1]});"
        for i in range(levels.phase1_levels, levels.n_levels)
    ]
    return lines + ["}"]


def lower_block(
    plan: ClassPlan,
    target: str | Target = "cuda",
    threads: int = 128,
    bank: str = "auto",
    prefetch_max_accumulators: int = 0,
    omega: float = 0.0,
) -> KernelSource:
    """Source of the block-form store kernel of ``plan`` (a Tier 2 class, derivative classes
    included), run with ``threads`` threads per item on the GPU."""
    tgt = TARGETS[target] if isinstance(target, str) else target
    if plan.tier is not Tier.BUFFERED:
        raise OptionsError(f"{plan.cls}: the block form is Tier 2's; this class is Tier 1")
    if not 32 <= threads <= BLOCK_MAX_THREADS or threads % 32:
        raise OptionsError(
            f"threads per item must be a multiple of 32 from 32 to {BLOCK_MAX_THREADS}, "
            f"got {threads!r}"
        )
    levels = level_program(plan)
    n_slots = levels.n_slots + len(BLOCK_SYMBOLS)  # the item's symbols after its slots
    shared = block_shared_bank(n_slots, tgt, bank)
    name = kernel_name(plan, Tier.BUFFERED, Epilogue.STORE, omega) + "_block"
    n_out = math.prod(plan.graph.output_shape)
    operator = f", erf({omega!r} r)/r" if omega else ""
    header = (
        f"// {plan.cls} variant {plan.variant.name}, Tier 2 block form, epilogue store{operator}"
    )
    parts = [
        header,
        "#include <math.h>" if tgt.name == "cpp" else "",
        "#include <stddef.h>" if tgt.name == "cpp" else "",
        tgt.prelude(),
        boys_source(tgt.inline_fn),
        _level_macro(tgt),
    ]
    body = [f"const int nout = {n_out};", "(void)nout;"]
    body += _body(plan, tgt, levels, shared, prefetch_max_accumulators, omega)
    parts.append(f"{tgt.kernel} {name}({KERNEL_ARGS})\n{{\n{_indent(body)}\n}}\n")
    return KernelSource(
        name,
        tgt.name,
        Tier.BUFFERED,
        Epilogue.STORE,
        "\n".join(p for p in parts if p),
        n_out,
        n_slots,
        None,
        threads if shared else 0,
        item_threads=threads if tgt.name == "cuda" else 1,
        block_program=packed_terms(levels.program),
    )
