"""Lowering of an orchestrated class to CUDA or C++ source.

Both tiers share the quartet prologue (geometry, the loops over the bra and ket primitive pairs
with their precomputed Gaussian-product data, Boys function) and differ in where values live:

* Tier 1: one function; VRR vertices, the accumulator bank and Phase 2 are registers in the
  plan's order, up to the model's register budgets; beyond them values live in per-thread
  shared-memory slots (``placement``); a kernel the model holds to fewer registers for
  occupancy carries launch bounds. The epilogue writes each integral as soon as it is
  computed (``store``), keeps it for the quartet's J and K contraction (``jk``: one atomic
  update per element of the six J/K blocks, ``_jk_contraction``) or, for a derivative class,
  weighs it with the densities into three sums that end as per-atom energy gradients
  (``grad``).
* Tier 2: VRR segments (``layout.tier2_layout``) as non-inlined functions over a shared
  ``FrcgPrim`` record; accumulators and segment-crossing values in the interleaved slot buffer;
  Phase 2 as straight-line non-inlined functions generated from the layout's program (values
  in registers within a function, in their slots between functions), or, for programs longer
  than ``PHASE2_COMPILED_MAX``, that program executed by the kernel from the buffer; the
  integrals go to the output buffer, from which Kernel 2 builds J and K. On the GPU the slot
  bank is in shared memory when a warp's bank fits (``SHARED_BANK_MAX_BYTES``), in the global
  buffer otherwise, and for classes with few integrals the source also holds a generated
  Kernel 2 (``<name>_jk``): one thread per quartet folding the class's integrals, read back
  from the output buffer, into J and K with the same unrolled contraction as Tier 1's J/K
  epilogue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product

from ..angmom import sp_common_factor
from ..errors import OptionsError
from ..graph import Dag, Term
from ..graph import symbols as S
from ..orchestration.placement import Tier1Placement
from ..orchestration.plan import ClassPlan
from ..variants import Tier
from .boys import boys_source
from .layout import (
    DEFAULT_SEGMENT_SIZE,
    PHASE2_SYMBOLS,
    Phase2Program,
    Tier2Layout,
    tier2_layout,
)
from .target import (
    TARGETS,
    TIER1_MAX_SHARED_BYTES,
    TIER1_THREADS,
    Epilogue,
    Target,
    tiled_output_index,
)

KERNEL_ARGS = """int n, const int* __restrict__ quartets, const double* __restrict__ qscale,
    const double* __restrict__ seg_xyz, const int* __restrict__ qpair,
    const int* __restrict__ seg_ao, const int* __restrict__ pair_prim,
    const double* __restrict__ pair_data, const double* __restrict__ boys_table,
    double* __restrict__ out, double* __restrict__ buf, const long long stride,
    const int* __restrict__ p2_dst, const int* __restrict__ p2_start,
    const int* __restrict__ p2_src, const double* __restrict__ p2_coef,
    const int* __restrict__ p2_code, const int p2_len, const int nao,
    const double* __restrict__ dm, double* __restrict__ vj, double* __restrict__ vk,
    const int n_dm"""

# The gradient epilogue's kernels take four arguments more: each segment's atom, the (natm, 3)
# energy gradient the kernel adds into, and the factors of J and K in the energy.
GRAD_KERNEL_ARGS = (
    KERNEL_ARGS
    + """,
    const int* __restrict__ seg_atom, double* __restrict__ grad, const double j_factor,
    const double k_factor"""
)

PRIMITIVE_FIELDS = (*S.PRIMITIVE_SYMBOLS, "pref")

# What the kernels read per primitive pair of a segment pair (first, second) with exponents
# e1, e2, coefficients c1, c2 and centres R1, R2, in this order (``pair_data``, row-major):
# zeta = e1 + e2, 1 / zeta, c1 c2 exp(-e1 e2 |R2 - R1|^2 / zeta) / zeta and the three components
# of P - R1 = e2 (R2 - R1) / zeta. The runtime computes them once per launch
# (``runtime.pairs``); the loops then spend no exponential or division on them per primitive
# quartet.
PAIR_FIELDS = ("zeta", "ooz", "kab", "PAx", "PAy", "PAz")
# Derivative classes also read the two exponents e1, e2 (the raised term's weight is twice the
# exponent of the derivative centre); the row stays a whole number of 16-byte pairs.
DERIV_PAIR_FIELDS = (*PAIR_FIELDS, "e1", "e2")
# The local names the loops give the exponents of centres A, B (bra row) and C, D (ket row).
EXPONENT_NAMES = ("ea", "eb", "ec", "ed")


def pair_fields(plan: ClassPlan) -> tuple[str, ...]:
    """The pair-data row the kernel of ``plan`` reads (``runtime.pairs`` builds either)."""
    return PAIR_FIELDS if plan.cls.deriv is None else DERIV_PAIR_FIELDS


def primitive_fields(plan: ClassPlan) -> tuple[str, ...]:
    """The per-primitive-quartet quantities of ``plan``: a derivative class adds the weight
    of its raised term (``symbols.TWO_EXP``)."""
    if plan.cls.deriv is None:
        return PRIMITIVE_FIELDS
    return (*PRIMITIVE_FIELDS, S.TWO_EXP[plan.cls.deriv])


# Classes with at most this many accumulators read the next ket pair row one primitive quartet
# ahead: their loop bodies are short, so the row loads' latency is exposed. Larger classes have
# long enough bodies to hide it, and the prefetched row's registers would push them across an
# occupancy step.
PREFETCH_MAX_ACCUMULATORS = 16

# Longest Phase 2 program lowered as compiled code: compiled Phase 2 keeps values in registers
# within a function and reads no program from memory, so it beats the interpreted program;
# compile time grows with the program and ptxas (CUDA 13.0) fails on programs of several
# hundred thousand statements. Longer programs are interpreted.
PHASE2_COMPILED_MAX = 40_000

# A Tier 2 kernel keeps its slot bank in shared memory, one lane per thread, when the bank of
# one warp fits in SHARED_BANK_MAX_BYTES (two warps of 255 registers per SM at most); Kernel 1
# then runs SHARED_BANK_THREADS threads per block. The per-primitive accumulation into the bank
# stays on the SM instead of going through L2.
SHARED_BANK_THREADS = 32
SHARED_BANK_MAX_BYTES = 96 * 1024
BANKS = ("auto", "shared", "global")

# The generated Kernel 2 is emitted for classes with at most this many integrals: with few
# integrals its unrolled per-thread updates beat the run-time forms, while above this size the
# thread-block form (a shared-memory contraction that saves most of the atomic updates) wins,
# so larger classes would only carry a long kernel they never run.
GENERATED_KERNEL2_MAX_OUTPUTS = 60

# Tier 1 classes with at most this many integrals contract J and K in their own epilogue (the
# fused ``jk`` epilogue holds the quartet's integrals in registers: (pp|pp)'s 81 compile
# without spills on sm_90 at the full register budget); larger Tier 1 classes store their
# integrals and Kernel 2 contracts them.
FUSED_JK_MAX_OUTPUTS = 81


@dataclass(frozen=True)
class KernelSource:
    name: str
    target: str
    tier: Tier
    epilogue: Epilogue
    source: str
    n_outputs: int
    n_slots: int  # per quartet: Tier 2's slot buffer, Tier 1's shared-memory slots (or 0)
    layout: Tier2Layout | None
    bank_threads: int = 0  # threads per block fixed by the kernel (Tier 1, shared bank); 0: any
    jk_kernel: str | None = None  # Tier 2 on the GPU: the generated Kernel 2
    registers: int | None = None  # Tier 1 on the GPU: registers its launch bounds hold it to
    item_threads: int = 1  # threads per work item (a block each in Tier 2's block form)
    block_program: Phase2Program | None = None  # the block form's level program

    @property
    def program(self) -> Phase2Program | None:
        """The statements the kernel reads from its ``p2_*`` arguments: Tier 2's Phase 2
        program, or the block form's level program (``lowering.levels``)."""
        if self.block_program is not None:
            return self.block_program
        return None if self.layout is None else self.layout.program


def kernel_name(plan: ClassPlan, tier: Tier, epilogue: Epilogue, omega: float = 0.0) -> str:
    basis = "sph" if plan.graph.spherical else "cart"
    variant = plan.variant.name.replace("-", "_")  # cls.tag names a derivative's centre
    lr = "" if not omega else "_lr"  # the long-range operator (its omega is in the source)
    return f"frcg_{plan.cls.tag}_{variant}_{basis}_t{int(tier)}_{epilogue.value}{lr}"


def _num(x: float) -> str:
    text = repr(float(x))
    return text if any(c in text for c in ".en") else text + ".0"


def _expr(terms: tuple[Term, ...], name, ready=None) -> str:
    """One chain of MUL/FMA/ADD (see ``Target``) summing ``terms``. It starts from a term
    without a factor when there is one (no instruction), then takes the terms in the order
    their values become available, ``ready(src)`` ascending: a statement then waits only for
    its last operand, where a chain in graph order stalls on a value just made by the
    statement before it."""

    def factor(t: Term) -> str | None:
        parts = [] if t.coef == 1.0 else [_num(t.coef)]
        if t.symbol is not None:
            parts.append(t.symbol)
        return " * ".join(parts) if parts else None

    rest = sorted(terms, key=lambda t: ready(t.src)) if ready else list(terms)
    bare = [t for t in rest if factor(t) is None]
    first = bare[0] if bare else rest[0]
    rest.remove(first)
    f = factor(first)
    chain = f"MUL({f}, {name(first.src)})" if f else name(first.src)
    for t in rest:
        f = factor(t)
        chain = f"FMA({f}, {name(t.src)}, {chain})" if f else f"ADD({chain}, {name(t.src)})"
    return chain


def _prologue(plan: ClassPlan) -> list[str]:
    """Quartet geometry (A - C only: the pair data carry the rest) and its primitive pairs."""
    lines = [
        "const int ia = quartets[4 * q], ib = quartets[4 * q + 1];",
        "const int ic = quartets[4 * q + 2], id = quartets[4 * q + 3];",
    ]
    for i, ax in enumerate("xyz"):
        lines.append(f"const double AC{ax} = seg_xyz[3 * ia + {i}] - seg_xyz[3 * ic + {i}];")
    lines += [
        "const int pab = qpair[2 * q], pcd = qpair[2 * q + 1];",
        "const int fab = pair_prim[2 * pab], nab = pair_prim[2 * pab + 1];",
        "const int fcd = pair_prim[2 * pcd], ncd = pair_prim[2 * pcd + 1];",
    ]
    return lines


def _loops_open(
    plan: ClassPlan,
    target: Target,
    record: str | None,
    prefetch_max_accumulators: int,
    omega: float = 0.0,
    boys: bool = True,
) -> list[str]:
    """The bra and ket primitive-pair loops and the per-primitive-quartet quantities (with
    ``boys`` the Boys values ``F`` too). With ``record`` they are stored into that FrcgPrim
    variable instead of local constants. Classes with at most ``prefetch_max_accumulators``
    accumulators read the next ket row ahead.
    ``omega`` > 0: the long-range operator erf(omega r) / r, whose integrals are the Coulomb
    integrals with rho = zeta eta / (zeta + eta) replaced by rho omega^2 / (omega^2 + rho)
    wherever it enters (the Boys argument, the recurrences' 1 / (zeta + eta) and rho terms,
    and the prefactor's sqrt(rho))."""
    pref_const = 2.0 * math.pi**2.5 * math.prod(sp_common_factor(l) for l in plan.cls.ls)
    d = (lambda f: f"{record}.{f}") if record else (lambda f: f"const double {f}")
    fields_of_row = pair_fields(plan)
    width = len(fields_of_row)
    deriv = plan.cls.deriv
    bra_fields: tuple[str, ...] = PAIR_FIELDS[:3] + S.PA
    ket_fields: tuple[str, ...] = ("eta", "ooe", "kcd", *S.QC)
    if deriv is not None:
        bra_fields += EXPONENT_NAMES[:2]
        ket_fields += EXPONENT_NAMES[2:]
    lines = [
        "for (int jab = 0; jab < nab; ++jab) {",
        f"const double* const bra = pair_data + (size_t){width} * (fab + jab);",
        *target.load_row("bra", bra_fields),
    ]
    if plan.n_accumulators <= prefetch_max_accumulators:
        # the next ket row is read while this one is used (the last trip reads its own row
        # again), so the loads' latency no longer opens every primitive quartet
        lines += [
            *target.row_buffer("ket", f"(pair_data + (size_t){width} * fcd)", width),
            "for (int jcd = 0; jcd < ncd; ++jcd) {",
            *target.row_fields("ket", ket_fields),
            "const int jnext = jcd + (jcd + 1 < ncd);",
            f"const double* const next = pair_data + (size_t){width} * (fcd + jnext);",
            *target.row_load("ket", "next", width),
        ]
    else:
        lines += [
            "for (int jcd = 0; jcd < ncd; ++jcd) {",
            f"const double* const ket = pair_data + (size_t){width} * (fcd + jcd);",
            *target.load_row("ket", ket_fields),
        ]
    lines += [
        "const double PQx = ACx + PAx - QCx, PQy = ACy + PAy - QCy, PQz = ACz + PAz - QCz;",
    ]
    # one reciprocal square root gives sqrt(1/(zeta+eta)) and, after a Newton step,
    # 1/(zeta+eta): a division and a square root less per primitive quartet
    if omega > 0.0:
        w2 = _num(omega * omega)
        lines += [
            "const double rsze0 = RSQRT(zeta + eta), ooze0 = rsze0 * rsze0;",
            "const double ooze1 = ooze0 * (2.0 - (zeta + eta) * ooze0);",
            f"const double att = {w2} / ({w2} + zeta * eta * ooze1);",
            "const double rsze = rsze0 * sqrt(att), ooze = ooze1 * att;",
            "const double rho = zeta * eta * ooze;",
        ]
    else:
        lines += [
            "const double rsze = RSQRT(zeta + eta), ooze0 = rsze * rsze;",
            "const double ooze = ooze0 * (2.0 - (zeta + eta) * ooze0), rho = zeta * eta * ooze;",
        ]
    lines.append("const double T = rho * (PQx * PQx + PQy * PQy + PQz * PQz);")
    fields = {
        **{S.PA[i]: f"PA{ax}" for i, ax in enumerate("xyz")},
        **{S.WP[i]: f"-eta * ooze * PQ{ax}" for i, ax in enumerate("xyz")},
        **{S.QC[i]: f"QC{ax}" for i, ax in enumerate("xyz")},
        **{S.WQ[i]: f"zeta * ooze * PQ{ax}" for i, ax in enumerate("xyz")},
        S.OO2Z: "0.5 * ooz",
        S.OO2E: "0.5 * ooe",
        S.OO2ZE: "0.5 * ooze",
        S.ROZ_OO2Z: "0.5 * rho * ooz * ooz",
        S.ROE_OO2E: "0.5 * rho * ooe * ooe",
        "pref": f"{_num(pref_const)} * rsze * kab * kcd",  # kab, kcd carry 1/zeta, 1/eta
    }
    if deriv is not None:
        fields[S.TWO_EXP[deriv]] = f"2.0 * {EXPONENT_NAMES[deriv]}"
    for f in primitive_fields(plan):
        if record or f not in (*S.PA, *S.QC):
            lines.append(f"{d(f)} = {fields[f]};")
    if boys:
        lines += boys_values(plan, record)
    return lines


def boys_values(plan: ClassPlan, record: str | None = None) -> list[str]:
    """The Boys values F[0..boys_order] of the primitive quartet's T (into ``record``'s F, else
    a local array)."""
    lines = [] if record else [f"double F[{plan.cls.boys_order + 1}];"]
    boys_out = f"{record}.F" if record else "F"
    return lines + [f"frcg_boys({plan.cls.boys_order}, T, boys_table, {boys_out});"]


LOOPS_CLOSE = ["}", "}"]

# Phase 2 needs A - B and C - D only after the loops: reloading keeps them out of registers
# during the VRR.
HRR_GEOMETRY = [
    f"const double AB{ax} = seg_xyz[3 * ia + {i}] - seg_xyz[3 * ib + {i}], "
    f"CD{ax} = seg_xyz[3 * ic + {i}] - seg_xyz[3 * id + {i}];"
    for i, ax in enumerate("xyz")
]


def _vrr_statement(dag: Dag, v: int, name, boys_leaf, ready) -> str:
    node = dag.nodes[v]
    value = boys_leaf(node.label[2]) if node.is_leaf else _expr(node.terms, name, ready)
    return f"const double {name(v)} = {value};"


WARP_BRA_SOURCE = r"""
// The J_ab updates of a warp whose 32 threads all hold items of one bra pair (the screening
// writes each bra pair's surviving kets one after another): summed across the warp and added
// once, where 32 atomic updates of one address would run one after another.
static __device__ __forceinline__ bool frcg_warp_bra(const int a, const int b)
{
    const unsigned all = __activemask();
    if (all != 0xffffffffu) return false;
    const int a0 = __shfl_sync(all, a, 0), b0 = __shfl_sync(all, b, 0);  // every lane shuffles
    return __all_sync(all, a == a0 && b == b0);
}
static __device__ __forceinline__ void frcg_warp_add(double* p, double v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(p, v);
}
#define ADD_BRA(x, v) \
    do { const double v_ = (v); if (bra_warp_) frcg_warp_add(&(x), v_); else ATOMIC(x, v_); } \
    while (0)
"""


def _jk_contraction(shape: tuple[int, ...], warp_bra: bool = False) -> list[str]:
    """Half J and K of one quartet's integrals (``I{k}``: integral k in the order of
    ``shape``'s positions) for each of the ``n_dm`` densities stacked in ``dm``
    (nao x nao each, likewise ``vj`` and ``vk``), 8-fold symmetry through the quartet's scale
    ``sq``: each element of the six J and K blocks the quartet touches sums its integrals
    against the density block first and is then added with one atomic update (J_ab, J_cd,
    K_ac, K_bc, K_ad, K_bd: ni nj + nk nl + ni nk + nj nk + ni nl + nj nl updates, where one
    per integral and block would be six times the integrals). A null ``vj`` or ``vk`` leaves
    that matrix out (a branch uniform over the launch). ``warp_bra`` (CUDA, with
    ``WARP_BRA_SOURCE``): a warp on one bra pair sums its J_ab updates first."""
    ni, nj, nk, nl = shape
    at = {q: n for n, q in enumerate(product(range(ni), range(nj), range(nk), range(nl)))}
    off = {"a": "oa", "b": "ob", "c": "oc", "d": "od"}
    size = {"a": ni, "b": nj, "c": nk, "d": nl}

    def block(matrix: str, rows: str, cols: str, weight, symmetric: bool,
              add: str = "ATOMIC") -> list[str]:  # fmt: skip
        """matrix[rows, cols] += sum over the other two positions of I * D(weight pair), each
        element added by the macro ``add``."""
        x, y = weight
        lines = ["{"]
        for u, w in product(range(size[x]), range(size[y])):
            d = f"DM({off[x]} + {u}, {off[y]} + {w})"
            if symmetric:
                d += f" + DM({off[y]} + {w}, {off[x]} + {u})"
            lines.append(f"const double w{u}_{w} = {d};")
        for r, c in product(range(size[rows]), range(size[cols])):
            terms = []
            for u, w in product(range(size[x]), range(size[y])):
                pos = {rows: r, cols: c, x: u, y: w}
                terms.append(f"I{at[pos['a'], pos['b'], pos['c'], pos['d']]} * w{u}_{w}")
            target = f"{matrix}_[(size_t)({off[rows]} + {r}) * nao + {off[cols]} + {c}]"
            lines.append(f"{add}({target}, sq * ({' + '.join(terms)}));")
        return lines + ["}"]

    head = ["const bool bra_warp_ = frcg_warp_bra(oa, ob);"] if warp_bra else []
    return [
        *head,
        "for (int m_ = 0; m_ < n_dm; ++m_) {",
        "const size_t o_ = (size_t)m_ * nao * nao;",
        "const double* const dm_ = dm + o_;",
        "if (vj) {",
        "double* const vj_ = vj + o_;",
        *block("vj", "a", "b", "cd", True, "ADD_BRA" if warp_bra else "ATOMIC"),
        *block("vj", "c", "d", "ab", True),
        "}",
        "if (vk) {",
        "double* const vk_ = vk + o_;",
        *block("vk", "a", "c", "bd", False),
        *block("vk", "b", "c", "ad", False),
        *block("vk", "a", "d", "bc", False),
        *block("vk", "b", "d", "ac", False),
        "}",
        "}",
    ]


def _grad_macro() -> str:
    """The weight of one derivative integral (component x of (nabla ab|cd)) in j_factor E_J -
    k_factor E_K over the ``n_dm`` symmetric densities stacked in ``dm`` (one total density or
    two spin densities: ``jk.deriv``), added into the quartet's sum ``g`` of component x:
    W = 4 j Dt_ab Dt_cd - k kappa sum_s (Ds_ac Ds_bd + Ds_ad Ds_bc), with ``jw_`` = 4 j and
    ``kw_`` = k kappa set once per quartet."""
    a, b, c, d = "oa + (i)", "ob + (j)", "oc + (k)", "od + (l)"
    lines = [
        "#define FRCG_GRAD(g, i, j, k, l, val) do {",
        "double ab_ = 0.0, cd_ = 0.0, w_ = 0.0;",
        "for (int m_ = 0; m_ < n_dm; ++m_) {",
        "const double* const dm_ = dm + (size_t)m_ * nao * nao;",
        f"ab_ += DM({a}, {b});",
        f"cd_ += DM({c}, {d});",
        f"w_ -= DM({a}, {c}) * DM({b}, {d}) + DM({a}, {d}) * DM({b}, {c});",
        "}",
        "g += (val) * (jw_ * ab_ * cd_ + kw_ * w_);",
    ]
    return " \\\n    ".join(lines) + " \\\n} while (0)"


# What the J/K and gradient epilogues read of a quartet: its symmetry weight and first AOs.
EPILOGUE_QUARTET = (
    "const double sq = qscale[q];",
    "const int oa = seg_ao[ia], ob = seg_ao[ib], oc = seg_ao[ic], od = seg_ao[id];",
)


def _grad_open() -> list[str]:
    """The gradient epilogue's per-quartet state: the weights' factors and three sums."""
    return [
        *EPILOGUE_QUARTET,
        "const double jw_ = 4.0 * j_factor, kw_ = k_factor * (n_dm == 1 ? 1.0 : 2.0);",
        "double g0 = 0.0, g1 = 0.0, g2 = 0.0;",
    ]


WARP_ATOM_SOURCE = r"""
// One item's three gradient components on an atom (at: 3 * its index), added where a full
// warp's items share lane 0's atom as one warp sum and one atomic update per component, the
// other lanes' (and a partial warp's) each by itself: every item of a launch adds into the
// same 3 natm doubles, so per-item updates of one address would run one after another.
static __device__ __forceinline__ void frcg_atom_add(double* grad, const int at, const double x0,
                                                    const double x1, const double x2)
{
    const unsigned all = __activemask();
    if (all == 0xffffffffu) {
        const int at0 = __shfl_sync(all, at, 0);
        const bool mine = at == at0;
        double s0 = mine ? x0 : 0.0, s1 = mine ? x1 : 0.0, s2 = mine ? x2 : 0.0;
        for (int o = 16; o > 0; o >>= 1) {
            s0 += __shfl_xor_sync(all, s0, o);
            s1 += __shfl_xor_sync(all, s1, o);
            s2 += __shfl_xor_sync(all, s2, o);
        }
        if ((threadIdx.x & 31) == 0) {
            atomicAdd(grad + at0, s0);
            atomicAdd(grad + at0 + 1, s1);
            atomicAdd(grad + at0 + 2, s2);
        }
        if (mine) return;
    }
    atomicAdd(grad + at, x0);
    atomicAdd(grad + at + 1, x1);
    atomicAdd(grad + at + 2, x2);
}
"""


def _grad_close(deriv: int, warp_atoms: bool = False) -> list[str]:
    """The quartet's share of the gradient: its sums are minus the energy's derivative by the
    atom of the differentiated centre and, by translational invariance, plus the derivative
    by the atom of centre D (each position's kernel adds its own share). ``warp_atoms`` (CUDA,
    with ``WARP_ATOM_SOURCE``): a warp's items on one atom add their sums once."""
    centre = ("ia", "ib", "ic")[deriv]
    lines = [f"const int at_ = 3 * seg_atom[{centre}], atd_ = 3 * seg_atom[id];"]
    if warp_atoms:
        return lines + [
            "frcg_atom_add(grad, at_, -sq * g0, -sq * g1, -sq * g2);",
            "frcg_atom_add(grad, atd_, sq * g0, sq * g1, sq * g2);",
        ]
    for x in range(3):
        lines += [f"ATOMIC(grad[at_ + {x}], -sq * g{x});", f"ATOMIC(grad[atd_ + {x}], sq * g{x});"]
    return lines


def _epilogue_line(epilogue: Epilogue, k: int, index: tuple[int, ...], value: str) -> str:
    if epilogue is Epilogue.JK:  # kept for the quartet's contraction (``_jk_contraction``)
        return f"const double I{k} = {value};"
    if epilogue is Epilogue.GRAD:  # index: (component, i, j, k, l)
        x, *rest = index
        return f"FRCG_GRAD(g{x}, {', '.join(map(str, rest))}, {value});"
    return f"OUT({k}) = {value};"


def _tier1_body(
    plan: ClassPlan,
    target: Target,
    epilogue: Epilogue,
    placement: Tier1Placement,
    arrival_order: bool,
    prefetch_max_accumulators: int,
    omega: float,
    warp_bra: bool = False,
    warp_atoms: bool = False,
) -> list[str]:
    g = plan.graph
    n_acc = plan.n_accumulators
    slot = dict(placement.accumulator_slot)

    def name(v: int) -> str:  # Phase 2 vertex v (accumulator v < n_acc) at this point
        if v in slot:
            return f"SACC({slot[v]})"
        return f"acc{v}" if v < n_acc else f"h{v}"

    lines = [f"double acc{k} = 0.0;" for k in placement.register_accumulators()]
    if placement.accumulator_slot:
        lines.append(f"for (int s = 0; s < {len(slot)}; ++s) SET_SACC(s, 0.0);")
    lines += _loops_open(plan, target, None, prefetch_max_accumulators, omega)
    vname = lambda v: f"v{v}"  # noqa: E731
    target_of = {v: k for k, v in enumerate(g.vrr.outputs)}
    made = {v: i for i, v in enumerate(plan.vrr_order)}
    for v in plan.vrr_order:
        lines.append(
            _vrr_statement(g.vrr, v, vname, lambda m: f"pref * F[{m}]", arrival_order and made.get)
        )
        if v in target_of:
            k = target_of[v]
            if k in slot:
                lines.append(f"SET_SACC({slot[k]}, SACC({slot[k]}) + v{v});")
            else:
                lines.append(f"acc{k} += v{v};")
    lines += LOOPS_CLOSE + HRR_GEOMETRY
    if epilogue is Epilogue.JK:
        lines += EPILOGUE_QUARTET
    elif epilogue is Epilogue.GRAD:
        lines += _grad_open()
    # each integral leaves (is stored, kept for the J/K contraction or weighed) as soon as it
    # exists, so that the HRR's intermediates do not pile up in registers
    index = list(product(*(range(s) for s in g.output_shape)))
    outputs_of: dict[int, list[int]] = {}
    for k, v in enumerate(g.hrr.outputs):
        outputs_of.setdefault(v, []).append(k)

    def leave(v: int) -> list[str]:  # a computed vertex: every output position it fills
        return [_epilogue_line(epilogue, k, index[k], name(v)) for k in outputs_of.get(v, ())]

    lines += [
        _epilogue_line(epilogue, k, index[k], name(v))
        for k, v in enumerate(g.hrr.outputs)
        if v < n_acc
    ]
    made = {step.vertex: i for i, step in enumerate(placement.steps)}
    ready = lambda v: made.get(v, -1)  # noqa: E731 (accumulators are there from the start)
    for step in placement.steps:
        v = step.vertex
        value = _expr(g.hrr.nodes[v].terms, name, arrival_order and ready)
        lines.append(f"const double h{v} = {value};")
        lines += leave(v)
        for x, s in step.to_slot:
            lines.append(f"SET_SACC({s}, {name(x)});")
            slot[x] = s
    if epilogue is Epilogue.GRAD:
        lines += _grad_close(plan.cls.deriv, warp_atoms)
    elif epilogue is Epilogue.JK:
        lines += _jk_contraction(g.output_shape, warp_bra)
    return lines


JK_KERNEL_ARGS = """const int n, const int* __restrict__ quartets,
    const double* __restrict__ qscale, const int* __restrict__ seg_ao,
    const double* __restrict__ ints, const int nao,
    const double* __restrict__ dm, double* __restrict__ vj, double* __restrict__ vk,
    const int n_dm"""


def _jk_kernel(plan: ClassPlan, target: Target, name: str) -> str:
    """Kernel 2 generated for the class over the integrals of a store launch (tiled,
    ``target.OUTPUT_TILE``), contracting them as Tier 1's J/K epilogue does."""
    shape = plan.graph.output_shape
    nout = str(math.prod(shape))
    lines = [
        "const int q = blockIdx.x * blockDim.x + threadIdx.x;",
        "if (q >= n) return;",
        "const double sq = qscale[q];",
        "const int oa = seg_ao[quartets[4 * q]], ob = seg_ao[quartets[4 * q + 1]];",
        "const int oc = seg_ao[quartets[4 * q + 2]], od = seg_ao[quartets[4 * q + 3]];",
    ]
    lines += [
        f"const double I{k} = ints[{tiled_output_index(str(k), 'q', nout)}];"
        for k in range(math.prod(shape))
    ]
    lines += _jk_contraction(shape)
    return f"{target.kernel} {name}({JK_KERNEL_ARGS})\n{{\n{_indent(lines)}\n}}\n"


def _record_type(plan: ClassPlan, name: str) -> str:
    fields = "; ".join(f"double {f}" for f in primitive_fields(plan))
    return f"struct {name}_prim {{ {fields}; double F[{plan.cls.boys_order + 1}]; }};"


def _segment_functions(
    plan: ClassPlan,
    layout: Tier2Layout,
    target: Target,
    name: str,
    inline: bool,
    arrival_order: bool,
) -> str:
    g = plan.graph.vrr
    target_of = {v: k for k, v in enumerate(g.outputs)}
    # with ``inline`` a lone segment is inlined: its record fields stay in registers instead
    # of a stack frame
    fn = target.inline_fn if inline and len(layout.segments) == 1 else target.noinline_fn
    out = []
    for i, seg in enumerate(layout.segments):
        used = sorted({t.symbol for v in seg.statements for t in g.nodes[v].terms if t.symbol})
        body = [f"const double {s} = P->{s};" for s in used]
        body += [f"const double v{p} = BUF({layout.vrr_slot[p]});" for p in seg.live_in]
        made = {v: i for i, v in enumerate(seg.statements)}
        ready = lambda v, made=made: made.get(v, -1)  # noqa: E731 (live-in values: loaded first)
        for v in seg.statements:
            body.append(
                _vrr_statement(
                    g,
                    v,
                    lambda u: f"v{u}",
                    lambda m: f"P->pref * P->F[{m}]",
                    arrival_order and ready,
                )
            )
            if v in seg.spill:
                body.append(f"BUF({layout.vrr_slot[v]}) = v{v};")
            if v in target_of:
                body.append(f"BUF({layout.acc_slot[target_of[v]]}) += v{v};")
        out.append(
            f"{fn} void {name}_s{i}(const struct {name}_prim* __restrict__ P, "
            f"double* __restrict__ bank, const long long bank_stride, const int lane)\n{{\n    "
            + "\n    ".join(body)
            + "\n}"
        )
    return "\n\n".join(out)


def _phase2_functions(
    layout: Tier2Layout, target: Target, name: str, size: int, inline: bool, arrival_order: bool
) -> str:
    """Phase 2 as straight-line code, ``size`` program entries per function (non-inlined
    unless ``inline`` and one function holds it all). Within a function values stay in
    registers; a value goes to its buffer slot only when a later function reads it before the
    slot is overwritten."""
    prog = layout.program
    n = len(prog)
    seg = lambda i: i // size  # noqa: E731
    store = [False] * n
    later_read: dict[int, int] = {}  # slot -> last function reading its current value
    for i in range(n - 1, -1, -1):
        dst = int(prog.dst[i])
        if dst >= 0:
            store[i] = later_read.pop(dst, -1) > seg(i)
        for t in range(prog.start[i], prog.start[i + 1]):
            src = int(prog.src[t])
            later_read[src] = max(later_read.get(src, -1), seg(i))
    geometry = ", ".join(f"const double {x}" for x in PHASE2_SYMBOLS[1:])
    fn = target.inline_fn if inline and n <= size else target.noinline_fn
    out = []
    for first in range(0, n, size):
        local: dict[int, int] = {}  # slot -> the entry of this function holding its value
        value = lambda s, local=local: f"t{local[s]}" if s in local else f"BUF({s})"  # noqa: E731
        ready = lambda s, local=local: local.get(s, -1)  # noqa: E731
        body = []
        for i in range(first, min(first + size, n)):
            terms = tuple(
                Term(
                    float(prog.coef[t]),
                    PHASE2_SYMBOLS[prog.code[t]] if prog.code[t] else None,
                    int(prog.src[t]),
                )
                for t in range(prog.start[i], prog.start[i + 1])
            )
            expr = _expr(terms, value, arrival_order and ready)
            dst = int(prog.dst[i])
            if dst < 0:
                body.append(f"OUT({-dst - 1}) = {expr};")
                continue
            body.append(f"const double t{i} = {expr};")
            local[dst] = i
            if store[i]:
                body.append(f"BUF({dst}) = t{i};")
        out.append(
            f"{fn} void {name}_p{first // size}(double* __restrict__ bank, "
            f"double* __restrict__ out, const long long bank_stride, const int lane, const int q, "
            f"const int n, const int nout, {geometry})\n{{\n    (void)n; (void)nout;\n    "
            + "\n    ".join(body)
            + "\n}"
        )
    return "\n\n".join(out)


def _bank_lines(shared: bool) -> list[str]:
    """Where this thread's lane of the slot bank is (BUF's ``bank``, ``bank_stride``, ``lane``)."""
    if shared:
        return [
            "extern __shared__ double frcg_bank[];",
            "double* const bank = frcg_bank;",
            "const long long bank_stride = blockDim.x;",
            "const int lane = threadIdx.x;",
        ]
    return [
        "double* const bank = buf;",
        "const long long bank_stride = stride;",
        "const int lane = q;",
    ]


def _tier2_body(
    plan: ClassPlan,
    target: Target,
    layout: Tier2Layout,
    name: str,
    size: int,
    compiled: bool,
    shared: bool,
    prefetch_max_accumulators: int,
    omega: float,
) -> list[str]:
    lines = _bank_lines(shared)
    lines.append(f"for (int s = 0; s < {layout.n_phase2_slots}; ++s) BUF(s) = 0.0;")
    lines.append(f"struct {name}_prim P;")
    lines += _loops_open(plan, target, "P", prefetch_max_accumulators, omega)
    lines += [f"{name}_s{i}(&P, bank, bank_stride, lane);" for i in range(len(layout.segments))]
    lines += LOOPS_CLOSE + HRR_GEOMETRY
    if compiled:
        geometry = ", ".join(PHASE2_SYMBOLS[1:])
        n_fn = -(-len(layout.program) // size)
        return lines + [
            f"{name}_p{i}(bank, out, bank_stride, lane, q, n, nout, {geometry});"
            for i in range(n_fn)
        ]
    return lines + [
        "const double sym[7] = {1.0, ABx, ABy, ABz, CDx, CDy, CDz};",
        "for (int i = 0; i < p2_len; ++i) {",
        "double s = 0.0;",
        "for (int t = p2_start[i]; t < p2_start[i + 1]; ++t)",
        "    s += p2_coef[t] * sym[p2_code[t]] * BUF(p2_src[t]);",
        "const int dst = p2_dst[i];",
        "if (dst >= 0) BUF(dst) = s; else OUT(-dst - 1) = s;",
        "}",
    ]


def _indent(lines: list[str]) -> str:
    depth, out = 1, []
    for line in lines:
        if line.startswith("}"):
            depth -= 1
        out.append("    " * depth + line)
        if line.endswith("{"):
            depth += 1
    return "\n".join(out)


def shared_bank(n_slots: int, target: Target, bank: str = "auto") -> bool:
    """Whether a Tier 2 kernel with ``n_slots`` slots per quartet keeps its bank in shared
    memory (CUDA only; ``bank`` is "auto", "shared" or "global")."""
    if bank not in BANKS:
        raise OptionsError(f"unknown slot bank {bank!r}; one of {', '.join(BANKS)}")
    fits = 8 * n_slots * SHARED_BANK_THREADS <= SHARED_BANK_MAX_BYTES
    if bank == "shared" and not fits:
        raise OptionsError(
            f"a bank of {n_slots} slots does not fit in {SHARED_BANK_MAX_BYTES} bytes of shared "
            f"memory per {SHARED_BANK_THREADS} threads"
        )
    return target.name == "cuda" and bank != "global" and fits


def lower(
    plan: ClassPlan,
    target: str | Target = "cuda",
    epilogue: str | Epilogue = Epilogue.STORE,
    segment_size: int = DEFAULT_SEGMENT_SIZE,
    bank: str = "auto",
    register_target: bool = True,
    ordered_slot_reads: bool = False,
    denser: int | None = None,
    arrival_order: bool = True,
    prefetch_max_accumulators: int = PREFETCH_MAX_ACCUMULATORS,
    phase2_compiled_max: int = PHASE2_COMPILED_MAX,
    generated_kernel2_max_outputs: int = GENERATED_KERNEL2_MAX_OUTPUTS,
    omega: float = 0.0,
    warp_bra_j: bool = True,
) -> KernelSource:
    """Source of the kernel for ``plan`` in its tier (forced or chosen by the model); ``bank``
    places Tier 2's slot bank (see ``shared_bank``). A Tier 1 kernel the model holds to fewer
    registers (``ClassPlan.tier1_registers``) is so with the store epilogue, which also feeds
    Kernel 2, and unless ``register_target`` is false; otherwise it uses the full-budget
    placement; ``denser`` picks a store kernel's placement from ``ClassPlan.tier1_denser``
    instead. Tier 1 reads its shared-memory slots in order with ``ordered_slot_reads``, as
    early as ptxas likes otherwise (``Target.tier1_slots``). Each statement sums its terms in
    the order their values become available with ``arrival_order``, in graph order otherwise
    (``_expr``). The three after it set the thresholds named by this module's constants of the
    same names (``options.KernelOptions``); ``omega`` > 0 gives the kernel of the long-range
    operator erf(omega r) / r (``_loops_open``). ``warp_bra_j``: a CUDA J/K epilogue sums the
    J_ab updates of a warp on one bra pair before adding them (``WARP_BRA_SOURCE``)."""
    tgt = TARGETS[target] if isinstance(target, str) else target
    epi = Epilogue(epilogue)
    tier = plan.tier
    if tier is Tier.BUFFERED and epi is Epilogue.JK:
        raise OptionsError(
            "Tier 2 builds J and K with its contraction kernel: lower it with 'store'"
        )
    if plan.cls.deriv is not None and epi is Epilogue.JK:
        raise OptionsError(
            f"{plan.cls}: derivative classes are lowered with the 'store' or 'grad' epilogue; "
            "their J/K-gradient contraction is not a J/K epilogue"
        )
    if epi is Epilogue.GRAD and (plan.cls.deriv is None or tier is Tier.BUFFERED):
        raise OptionsError(
            f"{plan.cls} Tier {int(tier)}: the gradient epilogue is for Tier 1 derivative "
            "classes; lower Tier 2 with 'store' (its integrals are contracted afterwards)"
        )
    if not (omega >= 0.0 and math.isfinite(omega)):
        raise OptionsError(f"omega must be a finite number >= 0, got {omega!r}")
    name = kernel_name(plan, tier, epi, omega)
    n_out = math.prod(plan.graph.output_shape)
    operator = f", erf({_num(omega)} r)/r" if omega else ""
    parts = [
        f"// {plan.cls} variant {plan.variant.name}, Tier {int(tier)}, epilogue {epi.value}"
        + operator,
        "#include <math.h>" if tgt.name == "cpp" else "",
        "#include <stddef.h>" if tgt.name == "cpp" else "",
        tgt.prelude(),
        boys_source(tgt.inline_fn),
    ]
    layout = None
    bank_threads = 0
    jk_kernel = None
    held = None
    if tier is Tier.REGISTER:
        placement = plan.tier1_placement
        # the fused J/K epilogue is bound by its atomic updates, not by latency: it gains
        # nothing from the occupancy a register target buys, so it keeps the full budget
        if denser is not None:
            if epi is not Epilogue.STORE:
                raise OptionsError("the denser Tier 1 placements are the store kernel's")
            placement = plan.tier1_denser[denser]
        elif plan.tier1_registers is not None and register_target and epi is Epilogue.STORE:
            held = plan.tier1_registers
        elif plan.tier1_fallback is not None:
            placement = plan.tier1_fallback
        if epi is Epilogue.GRAD:
            parts.append(_grad_macro())
        warp_bra = warp_bra_j and epi is Epilogue.JK and tgt.name == "cuda"
        if warp_bra:
            parts.append(WARP_BRA_SOURCE)
        warp_atoms = epi is Epilogue.GRAD and tgt.name == "cuda"
        if warp_atoms:
            parts.append(WARP_ATOM_SOURCE)
        body = tgt.tier1_slots(placement.n_slots, ordered_slot_reads) if placement.n_slots else []
        body += _tier1_body(
            plan, tgt, epi, placement, arrival_order, prefetch_max_accumulators, omega, warp_bra,
            warp_atoms,
        )  # fmt: skip
        n_slots = placement.n_slots
        bank_threads = TIER1_THREADS if tgt.name == "cuda" else 0
        if 8 * n_slots * bank_threads > TIER1_MAX_SHARED_BYTES:
            raise OptionsError(
                f"{plan.cls}: Tier 1 needs {n_slots} shared-memory slots per thread, more than "
                f"{TIER1_MAX_SHARED_BYTES} bytes per block of {TIER1_THREADS} threads"
            )
    else:
        layout = tier2_layout(plan, segment_size)
        shared = shared_bank(layout.n_slots, tgt, bank)
        parts.append(_record_type(plan, name))
        # inlining single functions pays with the bank in shared memory; with the global bank
        # the compiler keeps every slot's address in a register and spills (ptxas, sm_90)
        parts.append(_segment_functions(plan, layout, tgt, name, shared, arrival_order))
        compiled = len(layout.program) <= phase2_compiled_max
        if compiled:
            parts.append(_phase2_functions(layout, tgt, name, segment_size, shared, arrival_order))
        body = _tier2_body(
            plan, tgt, layout, name, segment_size, compiled, shared, prefetch_max_accumulators,
            omega,
        )  # fmt: skip
        n_slots = layout.n_slots
        bank_threads = SHARED_BANK_THREADS if shared else 0
        if tgt.name == "cuda" and n_out <= generated_kernel2_max_outputs and plan.cls.deriv is None:
            jk_kernel = f"{name}_jk"
            parts.append(_jk_kernel(plan, tgt, jk_kernel))
    kernel_lines = [f"const int nout = {n_out};", "(void)nout;"]
    kernel_lines += [tgt.quartet_begin, *_prologue(plan), *body, tgt.quartet_end]
    bounds = tgt.launch_bounds(held) if held is not None else ""
    args = GRAD_KERNEL_ARGS if epi is Epilogue.GRAD else KERNEL_ARGS
    parts.append(f"{tgt.kernel} {bounds}{name}({args})\n{{\n{_indent(kernel_lines)}\n}}\n")
    source = "\n".join(p for p in parts if p)
    return KernelSource(
        name,
        tgt.name,
        tier,
        epi,
        source,
        n_out,
        n_slots,
        layout,
        bank_threads,
        jk_kernel,
        held if bounds else None,
    )
