"""Kernel options: defaults that generate what the lowering's own defaults do, presets, the JSON
form, the library key, validation, and knobs that reach the generated kernels."""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pytest

import fusionrcg
from fusionrcg import PRESETS, KernelOptions, QuartetClass, kernel_options, plan_class
from fusionrcg.errors import FusionRCGError, OptionsError
from fusionrcg.library.store import denser_forms, get_kernel, request_key, spill_forms
from fusionrcg.lowering.kernel import lower
from fusionrcg.lowering.target import Epilogue
from fusionrcg.orchestration.plan import DEFAULT_MODEL
from fusionrcg.variants import VARIANTS

# Tier 1 without and with shared-memory slots (store and J/K), held to a register target,
# Tier 1 above total 6, Tier 2 with a generated Kernel 2 and without, ablation variants,
# Cartesian output
CASES = [
    ((1, 0, 0, 0), "full", True),
    ((2, 2, 1, 1), "full", True),
    ((3, 1, 1, 1), "full", False),
    ((2, 2, 2, 1), "full", True),
    ((2, 1, 1, 0), "tier2-only", True),
    ((2, 2, 2, 2), "tier2-only", True),
    ((2, 1, 2, 1), "no-dsa", True),
    ((2, 2, 0, 0), "no-axis", True),
    ((2, 2, 1, 1), "no-spherical", True),
]


@pytest.mark.parametrize(("ls", "variant", "spherical"), CASES)
def test_default_options_generate_the_lowerings_default_sources(ls, variant, spherical):
    """What the library lowers first under a preset is what ``lower`` gives with its own
    defaults, for both targets and both epilogues (Tier 2 has the store epilogue only)."""
    options = PRESETS[variant]
    plan = options.plan(QuartetClass(*ls), spherical)
    assert plan is plan_class(QuartetClass(*ls), VARIANTS[variant], spherical)
    first = spill_forms(options)[0]
    epilogues = ("store",) if plan.tier == 2 else ("store", "jk")
    for target in ("cuda", "cpp"):
        for epi in epilogues:
            via_options = lower(plan, target, epi, **options.lowering(), **first)
            assert via_options.source == lower(plan, target, epi).source


def test_default_spill_forms_and_denser_forms_keep_their_order():
    forms = spill_forms(KernelOptions())
    keys = [(f["register_target"], f["ordered_slot_reads"], f["arrival_order"]) for f in forms]
    assert keys == [(h, o, a) for h in (True, False) for o in (False, True) for a in (True, False)]
    graph_order = KernelOptions(arrival_order=False, register_target=False)
    assert spill_forms(graph_order) == [
        {"register_target": False, "ordered_slot_reads": o, "arrival_order": False}
        for o in (False, True)
    ]
    assert spill_forms(dataclasses.replace(graph_order, spill_fallbacks=False)) == [
        {"register_target": False, "ordered_slot_reads": False, "arrival_order": False}
    ]
    plan = plan_class(QuartetClass(2, 2, 1, 1))
    assert plan.tier1_denser
    assert len(denser_forms(plan, KernelOptions())) == 4 * len(plan.tier1_denser)
    assert all(not f["arrival_order"] for f in denser_forms(plan, graph_order))
    assert denser_forms(plan, KernelOptions(denser_placements=False)) == []


def test_presets_are_the_variants_with_default_knobs():
    assert set(PRESETS) == set(VARIANTS)
    for name, options in PRESETS.items():
        assert options.variant is VARIANTS[name]
        assert options.replace(variant="full") == KernelOptions()
        assert kernel_options(name) is options
        assert kernel_options(VARIANTS[name]) == options
        assert kernel_options(options) is options
    with pytest.raises(fusionrcg.VariantError):
        kernel_options("no-such-variant")


def test_options_round_trip_through_json_and_key_on_every_field():
    changed = {
        "variant": VARIANTS["no-dsa"],
        "model": dataclasses.replace(DEFAULT_MODEL, tier1_denser_phase2=(64,)),
        "segment_size": 500,
        "bank": "global",
        "register_target": False,
        "ordered_slot_reads": True,
        "arrival_order": False,
        "spill_fallbacks": False,
        "denser_placements": False,
        "ptxas_level": 1,
        "prefetch_max_accumulators": 0,
        "phase2_compiled_max": 10,
        "generated_kernel2_max_outputs": 0,
        "omega": 0.4,
        "warp_bra_j": False,
        "item_threads": 128,
    }
    assert set(changed) == {f.name for f in dataclasses.fields(KernelOptions)}
    base = KernelOptions()
    keys = {base.key()}
    for name, value in changed.items():
        options = dataclasses.replace(base, **{name: value})
        text = json.dumps(options.to_json())
        assert KernelOptions.from_json(json.loads(text)) == options
        keys.add(options.key())
    assert len(keys) == len(changed) + 1
    assert KernelOptions.from_json(base.to_json()).key() == base.key()


@pytest.mark.parametrize(
    "changes",
    [
        {"bank": "texture"},
        {"ptxas_level": 4},
        {"segment_size": 0},
        {"prefetch_max_accumulators": -1},
        {"variant": "full"},
    ],
)
def test_invalid_options_are_rejected(changes):
    with pytest.raises(OptionsError) as info:
        dataclasses.replace(KernelOptions(), **changes)
    assert isinstance(info.value, FusionRCGError) and isinstance(info.value, ValueError)


def test_from_json_rejects_unknown_fields():
    data = KernelOptions().to_json() | {"threads": 64}
    with pytest.raises(OptionsError, match="not a kernel-options record"):
        KernelOptions.from_json(data)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")
def test_options_key_the_library_and_reach_the_kernels(tmp_path, get_molecule):
    """Different options are different library entries with different sources, each recorded
    with its options; a kernel of non-default options computes the same integrals."""
    cls = QuartetClass(1, 1, 0, 0)
    default = get_kernel(cls, "full", target="cpp", directory=tmp_path)
    assert get_kernel(cls, KernelOptions(), target="cpp", directory=tmp_path).cached
    knobs = KernelOptions(arrival_order=False, prefetch_max_accumulators=0)
    other = get_kernel(cls, knobs, target="cpp", directory=tmp_path)
    assert other.options == knobs and default.options == KernelOptions()
    assert other.binary != default.binary
    assert "jnext" in default.binary.with_suffix(".cpp").read_text()
    assert "jnext" not in other.binary.with_suffix(".cpp").read_text()
    epi = Epilogue.STORE
    assert request_key(cls, knobs, True, epi, "cpp", "host") != request_key(
        cls, KernelOptions(), True, epi, "cpp", "host"
    )
    mol = get_molecule("water_clusters/002", "cc-pvdz")
    p_shells = [i for i in range(mol.nbas) if mol.bas_angular(i) == 1]
    s_shells = [i for i in range(mol.nbas) if mol.bas_angular(i) == 0]
    quartet = (p_shells[0], p_shells[-1], s_shells[0], s_shells[-1])
    ref = mol.intor("int2e_sph", shls_slice=sum(((i, i + 1) for i in quartet), ()))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FUSIONRCG_KERNEL_DIR", str(tmp_path))
        mine = fusionrcg.shell_quartet_eri(mol, quartet, "cpu", knobs)
    assert np.abs(mine - ref).max() < 1e-12
