"""Generated sources and their build: structure, the ptxas report, bad input."""

import shutil

import numpy as np
import pytest

from fusionrcg import KernelOptions, QuartetClass, Tier, plan_class
from fusionrcg.errors import CompileError, CompileTimeout
from fusionrcg.library.compiler import nvcc_cubin
from fusionrcg.lowering.boys import TABLE_ORDERS, TABLE_POINTS, TABLE_STRIDE, boys_table
from fusionrcg.lowering.kernel import PREFETCH_MAX_ACCUMULATORS, SHARED_BANK_THREADS, lower
from fusionrcg.lowering.layout import tier2_layout
from fusionrcg.orchestration.placement import place_tier1
from fusionrcg.orchestration.slots import check_slots
from qctoolchain import parse_ptxas

PTXAS = """ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
    400 bytes stack frame, 148 bytes spill stores, 192 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 400 bytes cumulative stack size
ptxas info    : Function properties for k_s0
    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
"""


def test_parse_ptxas_sums_spills_over_functions():
    r = parse_ptxas(PTXAS, 1.5)
    assert (r.registers, r.spill_store_bytes, r.spill_load_bytes) == (255, 156, 196)
    assert (r.stack_bytes, r.functions, r.compile_seconds) == (400, 2, 1.5)
    with pytest.raises(ValueError):
        parse_ptxas("nothing here")


def test_boys_table_shape():
    t = boys_table()
    assert t.shape == (TABLE_POINTS, TABLE_STRIDE) and TABLE_STRIDE % 2 == 0
    assert not t[:, TABLE_ORDERS:].any()  # padding
    assert np.isclose(t[0, 0], 1.0) and np.isclose(t[0, 3], 1 / 7)


def test_tier1_source_is_straight_line_with_accumulators():
    plan = plan_class(QuartetClass(2, 0, 2, 0))
    assert plan.tier is Tier.REGISTER
    k = lower(plan, "cuda", "store")
    assert k.n_slots == 0 and k.layout is None
    assert k.source.count(" += v") == plan.n_accumulators  # one accumulation per HRR input
    assert k.source.count("OUT(") == 25 + 1  # 25 outputs plus the macro definition
    jk = lower(plan, "cuda", "jk", warp_bra_j=False)
    assert jk.source.count("const double I") == 25  # each integral kept for the contraction
    # one atomic update per element of J_ab, J_cd, K_ac, K_bc, K_ad, K_bd (5 5 25 5 5 1 for
    # (ds|ds)), not six per integral, plus the macro definition
    assert jk.source.count("ATOMIC(") == 46 + 1
    assert "frcg_warp_bra" not in jk.source


@pytest.mark.parametrize("target", ["cuda", "cpp"])
def test_jk_epilogue_sums_a_warps_j_ab_updates_on_the_gpu(target, tmp_path):
    """``warp_bra_j`` (the default): the CUDA J/K epilogue adds the 5 J_ab elements of (ds|ds)
    through ``ADD_BRA`` (summed across a warp on one bra pair, else each thread's atomic), the
    other 41 atomically; the host's J/K epilogue is the same either way; nvcc builds it."""
    plan = plan_class(QuartetClass(2, 0, 2, 0))
    jk = lower(plan, target, "jk")
    if target == "cpp":
        assert jk.source == lower(plan, target, "jk", warp_bra_j=False).source
        return
    body = jk.source[jk.source.index("extern") :]
    assert body.count("ADD_BRA(") == 5 and body.count("ATOMIC(") == 41
    assert body.count("frcg_warp_bra(oa, ob)") == 1  # once per item, before the densities
    if shutil.which("nvcc") is not None:
        src = tmp_path / "k.cu"
        src.write_text(jk.source)
        nvcc_cubin(src, tmp_path / "k.cubin", "sm_90", jk.name)


def test_small_classes_read_the_next_ket_row_ahead():
    """Classes of at most PREFETCH_MAX_ACCUMULATORS accumulators load ket pair row j + 1 while
    row j is in use (CUDA: 16-byte loads into a register buffer); larger ones load as they go."""
    small = plan_class(QuartetClass(4, 0, 0, 0))
    large = plan_class(QuartetClass(2, 0, 1, 0))
    assert small.n_accumulators <= PREFETCH_MAX_ACCUMULATORS < large.n_accumulators
    for target, buffer in (("cuda", "double2 ket[3];"), ("cpp", "double ket[6];")):
        src = lower(small, target, "store").source
        assert buffer in src and "const int jnext = jcd + (jcd + 1 < ncd);" in src
        assert "jnext" not in lower(large, target, "store").source


def test_statements_sum_their_terms_in_arrival_order():
    from fusionrcg.graph.ir import Term
    from fusionrcg.lowering.kernel import _expr

    name = lambda v: f"v{v}"  # noqa: E731
    ready = {1: 0, 3: 4, 5: 10, 7: 12}.get
    terms = (Term(1.0, "PAz", 5), Term(1.0, "WPz", 3), Term(2.0, "oo2z", 1))
    # the newest operand enters last; a chain starts with a product when every term has one
    assert _expr(terms, name, ready) == "FMA(PAz, v5, FMA(WPz, v3, MUL(2.0 * oo2z, v1)))"
    assert _expr(terms, name) == "FMA(2.0 * oo2z, v1, FMA(WPz, v3, MUL(PAz, v5)))"
    # a term without a factor starts the chain however late it comes: one FMA, no MUL
    assert _expr((Term(1.0, "ABx", 3), Term(1.0, None, 7)), name, ready) == "FMA(ABx, v3, v7)"
    assert _expr((Term(1.0, None, 1), Term(1.0, None, 7)), name, ready) == "ADD(v1, v7)"
    assert _expr((Term(-1.0, None, 5),), name, ready) == "MUL(-1.0, v5)"


def test_tier2_layout_is_consistent():
    plan = plan_class(QuartetClass(2, 2, 2, 2), "tier2-only")
    assert plan.tier is Tier.BUFFERED
    layout = tier2_layout(plan, 500)
    assert sum(len(s.statements) for s in layout.segments) == len(plan.vrr_order)
    assert len(layout.segments) == -(-len(plan.vrr_order) // 500)
    # every value read across a segment boundary was spilled by an earlier segment
    spilled = set().union(*(s.spill for s in layout.segments))
    assert all(set(s.live_in) <= spilled for s in layout.segments)
    assert min(layout.vrr_slot.values(), default=layout.n_phase2_slots) >= layout.n_phase2_slots
    check_slots(plan.vrr_ranges, _relative(layout))
    program = layout.program
    assert len(program) == len(plan.hrr_order)
    assert (program.dst < 0).sum() == len(plan.graph.hrr.outputs)
    k = lower(plan, "cpp", "store", 500)
    # VRR segments and Phase 2 functions, both of at most 500 statements
    phase2_functions = -(-len(program) // 500)
    assert k.source.count("__attribute__((noinline))") == len(layout.segments) + phase2_functions
    with pytest.raises(ValueError, match="contraction kernel"):
        lower(plan, "cuda", "jk")


def test_tier2_slot_bank_placement():
    plan = plan_class(QuartetClass(2, 1, 1, 1), "tier2-only")  # 147 slots: a warp's bank is 37 KB
    assert plan.tier is Tier.BUFFERED
    shared = lower(plan, "cuda", "store")
    assert shared.bank_threads == SHARED_BANK_THREADS
    assert "extern __shared__ double frcg_bank[];" in shared.source
    assert "__noinline__" not in shared.source  # one segment, one Phase 2 function: inlined
    # the generated Kernel 2 travels in the same source (CUDA only), for few integrals
    small = lower(plan_class(QuartetClass(2, 0, 1, 1), "tier2-only"), "cuda", "store")
    assert small.jk_kernel == f"{small.name}_jk" and f"void {small.jk_kernel}(" in small.source
    # (ds|pp): one atomic update per element of the six J/K blocks (5 9 15 3 15 3)
    assert small.source.split(f"void {small.jk_kernel}(")[1].count("ATOMIC(") == 50
    assert shared.jk_kernel is None  # 135 integrals: Kernel 2 is the thread-block form
    assert lower(plan, "cpp", "store").jk_kernel is None
    forced = lower(plan, "cuda", "store", bank="global")
    assert forced.bank_threads == 0 and "frcg_bank" not in forced.source
    assert lower(plan, "cpp", "store").bank_threads == 0  # the host has no shared memory
    big = plan_class(QuartetClass(2, 2, 2, 2), "tier2-only")  # 1192 slots, 625 integrals
    assert lower(big, "cuda", "store").bank_threads == 0
    assert lower(big, "cuda", "store").jk_kernel is None  # the block-form Kernel 2 runs there
    with pytest.raises(ValueError, match="does not fit"):
        lower(big, "cuda", "store", bank="shared")
    with pytest.raises(ValueError, match="unknown slot bank"):
        lower(plan, "cuda", "store", bank="texture")


def _relative(layout):
    from fusionrcg.orchestration.slots import SlotPlan

    rel = {v: s - layout.n_phase2_slots for v, s in layout.vrr_slot.items()}
    return SlotPlan(rel, layout.n_vrr_values, layout.n_vrr_slots)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_register_target_is_launch_bounds_with_a_full_budget_fallback():
    plan = plan_class(QuartetClass(1, 1, 1, 1))
    held = lower(plan, "cuda", "store")
    assert "__launch_bounds__(32, 12) frcg_1111" in held.source  # 12 warps of 168 registers
    assert held.n_slots == plan.tier1_placement.n_slots
    full = lower(plan, "cuda", "store", register_target=False)
    assert "__launch_bounds__" not in full.source
    assert full.n_slots == plan.tier1_fallback.n_slots
    assert "__launch_bounds__" not in lower(plan, "cpp", "store").source
    fused = lower(plan, "cuda", "jk")  # J/K epilogue: the full budget
    assert "__launch_bounds__" not in fused.source
    assert fused.n_slots == plan.tier1_fallback.n_slots


def test_slot_reads_are_plain_unless_ordered_and_writes_stay_in_place():
    plan = plan_class(QuartetClass(2, 2, 1, 1))
    early = lower(plan, "cuda", "store").source
    assert "const double* const frcg_lane" in early and "volatile double" not in early
    assert early.count("SET_SACC(") > plan.tier1_placement.n_slots  # every slot write
    assert 'asm volatile("st.shared.f64' in early
    ordered = lower(plan, "cuda", "store", ordered_slot_reads=True).source
    assert "volatile double* const frcg_lane" in ordered and "asm" not in ordered
    no_slots = lower(plan_class(QuartetClass(1, 0, 0, 0)), "cuda", "store").source
    assert "frcg_slots" not in no_slots and "SET_SACC(" not in no_slots


def _record_forms(monkeypatch, library) -> list[dict]:
    """The keyword arguments of every ``lower`` call the library makes."""
    forms = []

    def recording_lower(*args, **form):
        forms.append(form)
        return lower(*args, **form)

    monkeypatch.setattr(library, "lower", recording_lower)
    return forms


def test_library_walks_the_spill_fallbacks_until_ptxas_does_not_spill(tmp_path, monkeypatch):
    from fusionrcg.library import store as library
    from qctoolchain import PtxasReport

    forms = _record_forms(monkeypatch, library)

    compiles = []

    def spilling_but_in_full_budget_ordered_graph(source, cubin, arch, what, timeout=None,
                                                  ptxas_level=3):  # fmt: skip
        compiles.append(forms[-1])
        cubin.write_bytes(b"cubin")
        spill = 0 if forms[-1].items() >= library.spill_forms(KernelOptions())[-1].items() else 64
        return PtxasReport(255, spill, spill, spill, 1, 0.1)

    monkeypatch.setattr(library, "nvcc_cubin", spilling_but_in_full_budget_ordered_graph)
    cls = QuartetClass(1, 1, 1, 1)
    k = library.get_kernel(cls, "full", directory=tmp_path)
    # held before the full budget, early slot reads before ordered ones, each in arrival
    # order, then in graph order
    keys = [(f["register_target"], f["ordered_slot_reads"], f["arrival_order"]) for f in forms]
    assert keys == [(h, o, a) for h in (True, False) for o in (False, True) for a in (True, False)]
    assert not k.report.spills
    assert k.n_slots == plan_class(cls).tier1_fallback.n_slots
    compiles.clear()
    library.get_kernel(QuartetClass(1, 0, 0, 0), "full", directory=tmp_path)
    # no slots, no register target, one order for its few terms: one source, compiled once
    assert len(compiles) == 1


def test_library_keeps_the_form_with_the_fewest_spill_bytes_when_all_spill(tmp_path, monkeypatch):
    from fusionrcg.library import store as library
    from qctoolchain import PtxasReport

    forms = _record_forms(monkeypatch, library)
    spills = []

    def always_spilling(source, cubin, arch, what, timeout=None, ptxas_level=3):
        cubin.write_bytes(b"cubin")
        spills.append(96 if forms[-1]["arrival_order"] else 32)
        return PtxasReport(255, spills[-1], spills[-1], 0, 1, 0.1)

    monkeypatch.setattr(library, "nvcc_cubin", always_spilling)
    k = library.get_kernel(QuartetClass(2, 2, 2, 1), "full", directory=tmp_path)  # total 7
    assert spills == [96, 32]  # its two distinct sources: arrival order, then graph order
    assert k.report.spill_store_bytes == 32


def test_library_builds_tier2_once_in_arrival_order_though_it_spills(tmp_path, monkeypatch):
    from fusionrcg.library import store as library
    from qctoolchain import PtxasReport

    forms = _record_forms(monkeypatch, library)
    compiles = []

    def spilling(source, cubin, arch, what, timeout=None, ptxas_level=3):
        compiles.append(forms[-1])
        cubin.write_bytes(b"cubin")
        return PtxasReport(255, 64, 64, 64, 1, 0.1)

    monkeypatch.setattr(library, "nvcc_cubin", spilling)
    k = library.get_kernel(QuartetClass(2, 1, 1, 0), "tier2-only", directory=tmp_path)
    assert k.tier is Tier.BUFFERED and k.report.spills
    assert len(compiles) == 1 and compiles[0]["arrival_order"]
    assert compiles[0].items() >= library.spill_forms(KernelOptions())[0].items()


def test_denser_forms_fill_the_sub_partitions_first_then_take_arrival_order():
    from fusionrcg.library.store import denser_forms
    from fusionrcg.orchestration.plan import DEFAULT_MODEL
    from fusionrcg.orchestration.tier import SM_SUBPARTITIONS

    for ls in ((2, 2, 1, 1), (3, 1, 1, 1), (2, 2, 2, 0)):
        plan = plan_class(QuartetClass(*ls))
        forms = denser_forms(plan, KernelOptions())
        assert len(forms) == 4 * len(plan.tier1_denser)
        warps = [DEFAULT_MODEL.warps_per_sm(None, plan.tier1_denser[f["denser"]].n_slots)
                 for f in forms]  # fmt: skip
        keys = [(f["ordered_slot_reads"], -min(w, SM_SUBPARTITIONS), not f["arrival_order"], -w)
                for f, w in zip(forms, warps)]  # fmt: skip
        assert keys == sorted(keys)
    # (2,2|1,1): four warps in graph order before three in arrival order
    plan = plan_class(QuartetClass(2, 2, 1, 1))
    first = [(plan.tier1_denser[f["denser"]].n_slots, f["arrival_order"])
             for f in denser_forms(plan, KernelOptions())[:3]]  # fmt: skip
    assert DEFAULT_MODEL.warps_per_sm(None, first[0][0]) == SM_SUBPARTITIONS
    assert first[:2] == [(first[0][0], True), (first[0][0], False)]


def test_library_takes_the_first_denser_placement_that_does_not_spill(tmp_path, monkeypatch):
    from fusionrcg.library import store as library
    from qctoolchain import PtxasReport

    plan = plan_class(QuartetClass(2, 2, 2, 0))
    slots = [plan.tier1_placement.n_slots] + [p.n_slots for p in plan.tier1_denser]
    seen = []

    def spilling_densest_early_reads(source, cubin, arch, what, timeout=None, ptxas_level=3):
        text = source.read_text()
        n = int(text.split("for (int s = 0; s < ")[1].split(";")[0])  # slots zeroed
        seen.append((n, "volatile double" in text))
        cubin.write_bytes(b"cubin")
        spill = 64 if seen[-1] == (len(plan.tier1_denser[0].accumulator_slot), False) else 0
        return PtxasReport(254, spill, spill, spill, 1, 0.1)

    monkeypatch.setattr(library, "nvcc_cubin", spilling_densest_early_reads)
    k = library.get_kernel(plan.cls, "full", directory=tmp_path)
    # the model's placement, the densest early (spills), the next densest early (kept)
    assert [ordered for _, ordered in seen] == [False, False, False]
    assert k.n_slots == slots[2] and not k.report.spills
    seen.clear()
    fused = library.get_kernel(plan.cls, "full", epilogue="jk", directory=tmp_path)
    assert len(seen) == 1 and fused.n_slots == slots[0]  # J/K: the model's placement only


def test_library_builds_at_the_fallback_level_what_ptxas_cannot_finish(tmp_path, monkeypatch):
    from fusionrcg.library import store as library
    from qctoolchain import PtxasReport

    levels = []

    def slow_at_the_default_level(source, cubin, arch, what, timeout=None, ptxas_level=3):
        levels.append(ptxas_level)
        if ptxas_level != 1:
            raise CompileTimeout(f"{what}: compilation exceeded {timeout:.0f} s")
        cubin.write_bytes(b"cubin")
        return PtxasReport(255, 0, 0, 0, 1, 0.1, ptxas_level)

    monkeypatch.setattr(library, "nvcc_cubin", slow_at_the_default_level)
    cls = QuartetClass(1, 0, 0, 0)
    with pytest.raises(CompileTimeout, match=r"\(1,0\|0,0\).*exceeded 5 s"):
        library.get_kernel(cls, "full", directory=tmp_path, timeout=5)
    assert levels == [3] and not list(tmp_path.glob("*.cubin"))
    k = library.get_kernel(cls, "full", directory=tmp_path, timeout=5, fallback_ptxas_level=1)
    assert levels == [3, 3, 1] and k.report.ptxas_level == 1 and not k.cached
    assert k.binary.exists() and len(list(tmp_path.glob("*.cubin"))) == 1
    # the index serves that build; a new request finds the fallback binary, not ptxas again
    assert library.get_kernel(cls, "full", directory=tmp_path).report.ptxas_level == 1
    (tmp_path / "index").rename(tmp_path / "old_index")
    k2 = library.get_kernel(cls, "full", directory=tmp_path, timeout=5, fallback_ptxas_level=1)
    assert levels == [3, 3, 1] and k2.cached and k2.binary == k.binary
    with pytest.raises(CompileTimeout, match=r"exceeded 5 s at ptxas -O3 and at -O0"):
        library.get_kernel(QuartetClass(1, 1, 0, 0), directory=tmp_path, timeout=5,
                           fallback_ptxas_level=0)  # fmt: skip


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_nvcc_ptxas_level_timeout_and_bad_level(tmp_path):
    k = lower(plan_class(QuartetClass(1, 0, 0, 0)), "cuda", "store")
    src = tmp_path / "k.cu"
    src.write_text(k.source)
    assert nvcc_cubin(src, tmp_path / "k3.cubin", "sm_90", "k").ptxas_level == 3
    low = nvcc_cubin(src, tmp_path / "k1.cubin", "sm_90", "k", ptxas_level=1)
    assert low.ptxas_level == 1
    assert (tmp_path / "k1.cubin").read_bytes() != (tmp_path / "k3.cubin").read_bytes()
    with pytest.raises(CompileTimeout, match="k: compilation exceeded 0 s"):
        nvcc_cubin(src, tmp_path / "late.cubin", "sm_90", "k", timeout=0.01)
    assert not list(tmp_path.glob("late*"))
    with pytest.raises(CompileError, match="ptxas level 4 is not one of"):
        nvcc_cubin(src, tmp_path / "k4.cubin", "sm_90", "k", ptxas_level=4)


def test_nvcc_builds_tier1_without_spills_and_tier2(tmp_path):
    from fusionrcg.library.store import get_kernel

    for cls, variant in ((QuartetClass(2, 0, 1, 1), "full"), (QuartetClass(2, 2, 1, 0), "full"),
                         (QuartetClass(2, 2, 1, 0), "tier2-only")):  # fmt: skip
        k = get_kernel(cls, variant, directory=tmp_path)
        assert k.binary.stat().st_size > 0
        if k.tier is Tier.REGISTER:
            assert k.report.spill_store_bytes == 0


def test_compile_errors_name_the_cause(tmp_path):
    src = tmp_path / "bad.cu"
    src.write_text("this is not CUDA")
    with pytest.raises(CompileError, match="architecture 'sm_99' not supported"):
        nvcc_cubin(src, tmp_path / "bad.cubin", "sm_99", "(1,1|1,1)")
    if shutil.which("nvcc"):
        with pytest.raises(CompileError, match=r"\(1,1\|1,1\): compiler failed"):
            nvcc_cubin(src, tmp_path / "bad.cubin", "sm_90", "(1,1|1,1)")
        assert not (tmp_path / "bad.cubin").exists()


def test_missing_kernel_that_cannot_be_generated_names_the_class(tmp_path, monkeypatch):
    from fusionrcg import options
    from fusionrcg.library import store as library

    def no_pyscf(*args):
        raise ModuleNotFoundError("No module named 'pyscf'")

    monkeypatch.setattr(options, "plan_class", no_pyscf)
    with pytest.raises(CompileError, match=r"\(3,2\|3,2\) variant tier1-only: not in the kernel"):
        library.get_kernel(QuartetClass(3, 2, 3, 2), "tier1-only", directory=tmp_path)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")
def test_tier2_jk_request_is_served_by_the_built_store_kernel(tmp_path, monkeypatch):
    """A library built for a Tier 2 class's store kernel (all that its J/K needs: Kernel 2
    contracts the stored integrals) serves the J/K request without generating anything, so a
    machine without PySCF runs it; Tier 1's J/K kernel is another kernel and is not served."""
    from fusionrcg import options
    from fusionrcg.library import store as library

    tier2 = QuartetClass(1, 1, 1, 0)
    built = library.get_kernel(tier2, "tier2-only", target="cpp", directory=tmp_path)
    library.get_kernel(QuartetClass(1, 1, 0, 0), "tier1-only", target="cpp", directory=tmp_path)

    def no_pyscf(*args):
        raise ModuleNotFoundError("No module named 'pyscf'")

    monkeypatch.setattr(options, "plan_class", no_pyscf)
    jk = library.get_kernel(tier2, "tier2-only", epilogue="jk", target="cpp", directory=tmp_path)
    assert jk.tier is Tier.BUFFERED and jk.binary == built.binary and jk.cached
    with pytest.raises(CompileError, match="not in the kernel library"):
        library.get_kernel(
            QuartetClass(1, 1, 0, 0), "tier1-only", epilogue="jk", target="cpp", directory=tmp_path
        )


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")
def test_tiled_output_index_matches_untiling(tmp_path):
    """The C position of integral k of item q (every GPU store and Kernel 2), compiled for the
    host, against the untiling the runtime reads integrals with: every (item, integral) lands
    in its own place, inside a buffer of ``tiled_output_size``."""
    import ctypes

    from fusionrcg.library.compiler import cxx_shared
    from fusionrcg.lowering.target import (
        tiled_output_index,
        tiled_output_size,
        untile_outputs,
    )

    src = tmp_path / "index.cpp"
    expr = tiled_output_index("k", "q", "nout")
    src.write_text(
        "#include <stddef.h>\n"
        f'extern "C" long long position(int k, int q, int nout) {{ return {expr}; }}\n'
    )
    cxx_shared(src, tmp_path / "index.so")
    position = ctypes.CDLL(str(tmp_path / "index.so")).position
    position.restype = ctypes.c_longlong
    for n_items, n_outputs in ((1, 1), (45, 7), (64, 225), (33, 1)):
        values = np.arange(n_items * n_outputs, dtype=float).reshape(n_items, n_outputs) + 1
        buffer = np.zeros(tiled_output_size(n_items, n_outputs))
        for q in range(n_items):
            for k in range(n_outputs):
                buffer[position(k, q, n_outputs)] = values[q, k]
        assert np.count_nonzero(buffer) == values.size
        np.testing.assert_array_equal(untile_outputs(buffer, n_outputs)[:n_items], values)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")
def test_generated_boys_function_is_accurate(tmp_path):
    """The Taylor-table Boys source the kernels use, compiled for the host, against mpmath."""
    import ctypes

    import mpmath

    from fusionrcg.library.compiler import cxx_shared
    from fusionrcg.lowering.boys import BOYS_MAX_ORDER, boys_source
    from fusionrcg.reference.exact import boys_exact

    src = tmp_path / "boys.cpp"
    src.write_text(
        "#include <math.h>\n"
        + boys_source("static inline")
        + '\nextern "C" void boys(int m, double t, const double* table, double* f)'
        " { frcg_boys(m, t, table, f); }\n"
    )
    cxx_shared(src, tmp_path / "boys.so")
    lib = ctypes.CDLL(str(tmp_path / "boys.so"))
    ptr = ctypes.POINTER(ctypes.c_double)
    lib.boys.argtypes = [ctypes.c_int, ctypes.c_double, ptr, ptr]
    table = np.ascontiguousarray(boys_table())
    f = np.zeros(BOYS_MAX_ORDER + 1)
    worst = 0.0
    grid = np.concatenate(
        [[0.0, 1e-10], np.linspace(0.013, 45.0, 160), np.linspace(30.0, 31.0, 11), [29.99, 1e3]]
    )
    with mpmath.workdps(40):
        for t in grid:
            lib.boys(BOYS_MAX_ORDER, t, table.ctypes.data_as(ptr), f.ctypes.data_as(ptr))
            for m in range(BOYS_MAX_ORDER + 1):
                exact = boys_exact(m, mpmath.mpf(float(t)))
                worst = max(worst, float(abs((f[m] - exact) / exact)))
    assert worst < 1e-14


def _check_placement(plan, placement, phase2_values):
    """Every slot holds at most one live value; registers never hold more than allowed."""
    dag = plan.graph.hrr
    reads = {}
    for step, v in enumerate(plan.hrr_order):
        for src in {t.src for t in dag.nodes[v].terms}:
            reads.setdefault(src, []).append(step)
    slot_of = dict(placement.accumulator_slot)
    holder = {s: k for k, s in slot_of.items()}  # slot -> value it holds now
    assert len(holder) == len(slot_of)  # distinct slots for the accumulators
    for step, entry in enumerate(placement.steps):
        for src in {t.src for t in dag.nodes[entry.vertex].terms}:
            if src in slot_of:
                assert holder[slot_of[src]] == src  # its slot was not reused while it lived
        for x, s in entry.to_slot:
            owner = holder.get(s)
            assert owner is None or reads[owner][-1] <= step  # the old value is dead
            holder[s] = x
            slot_of[x] = s
        live = {
            x for x, r in reads.items() if r[-1] > step and x not in slot_of
            and (x < plan.n_accumulators or plan.hrr_order.index(x) <= step)
        }  # fmt: skip
        assert len(live) <= phase2_values
    assert placement.n_slots == len({*holder, *placement.accumulator_slot.values()})


def test_tier1_placement_keeps_registers_within_budget():
    plan = plan_class(QuartetClass(3, 1, 2, 0), "tier1-only")

    def place(n_reg, n_p2):
        return place_tier1(plan.graph.hrr, plan.hrr_order, plan.n_accumulators, n_reg, n_p2)

    everything = place(plan.n_accumulators, 10_000)
    assert everything.n_slots == 0 and not any(s.to_slot for s in everything.steps)
    for n_reg, n_p2 in ((0, 1), (5, 4), (40, 30)):
        placement = place(n_reg, n_p2)
        assert len(placement.register_accumulators()) == n_reg
        assert any(s.to_slot for s in placement.steps)
        _check_placement(plan, placement, n_p2)
    with pytest.raises(ValueError):
        place(-1, 4)


def test_tier1_with_shared_slots_matches_pyscf(get_molecule, monkeypatch, tmp_path):
    """Tier 1 with most values in slots (tiny register budgets), run as generated C++."""
    import fusionrcg
    from fusionrcg.orchestration.tier import RegisterModel
    from qcbench.eri.verify import Tolerance, reference_eri

    monkeypatch.setenv("FUSIONRCG_KERNEL_DIR", str(tmp_path))
    # 3-5 accumulators in registers, no occupancy target (it would take more registers)
    tiny = RegisterModel(
        tier1_phase1_fixed=245, tier1_phase2_values=4, tier1_occupancy_registers=None
    )
    options = fusionrcg.PRESETS["tier1-only"].replace(model=tiny)
    mol = get_molecule("organic/020_Vitamin_C", "cc-pvtz")
    by_l = {}
    for s in range(mol.nbas):
        by_l.setdefault(mol.bas_angular(s), []).append(s)
    quartet = (by_l[3][0], by_l[1][2], by_l[2][1], by_l[0][4])
    source = lower(options.plan(QuartetClass(3, 1, 2, 0)), "cpp", "store").source
    assert "SACC(" in source and "double frcg_lane[" in source
    value = fusionrcg.shell_quartet_eri(mol, quartet, backend="cpu", variant=options)
    ref = reference_eri(mol, quartet)
    tol = Tolerance(abs=1e-12, rel=1e-10, rel_floor=1e-8)
    assert tol.normalized(np.abs(value - ref), ref).max() <= 1.0


def test_tier1_slot_limit_matches_one_blocks_shared_memory():
    from fusionrcg.lowering.target import TIER1_MAX_SHARED_BYTES, TIER1_THREADS
    from fusionrcg.orchestration.tier import RegisterModel

    assert RegisterModel().tier1_max_slots == TIER1_MAX_SHARED_BYTES // (8 * TIER1_THREADS)
