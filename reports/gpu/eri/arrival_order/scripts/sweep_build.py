"""Tier 1 store kernels of chosen placements (the model's, "def", or denser placement i) and
operand orders (a: arrival, g: graph), one kernel dir per config: python sweep_build.py ROOT."""

import dataclasses
import json
import sys
from pathlib import Path

import fusionrcg.build.library as L
from fusionrcg.angmom import QuartetClass
from fusionrcg.orchestration.plan import plan_class

root = sys.argv[1]
CONFIGS = {
    "2211": [("def", True), ("def", False), (0, False), (0, True), (1, True), (2, True)],
    "3111": [("def", True), ("def", False), (0, True), (1, True), (0, False)],
    "2121": [("def", True), ("def", False), (0, True), (2, True)],
    "2220": [("def", True), (0, True), (1, True)],
}
out = []
for tag, forms in CONFIGS.items():
    cls = QuartetClass(*map(int, tag))
    base = plan_class(cls, "tier1-only")
    for which, arrival in forms:
        pl = base.tier1_placement if which == "def" else base.tier1_denser[which]
        plan = dataclasses.replace(
            base, tier1_placement=pl, tier1_denser=(), tier1_registers=None, tier1_fallback=None
        )
        L.plan_class = lambda *a, plan=plan, **k: plan
        L.SPILL_FALLBACKS = (
            {"register_target": False, "ordered_slot_reads": False, "arrival_order": arrival},
        )
        name = f"{which}{'a' if arrival else 'g'}"
        k = L.get_kernel(cls, "tier1-only", True, "store", "cuda", "sm_90", f"{root}/k_{name}_x")
        r = k.report
        out.append(
            dict(
                cls=tag,
                F=name,
                P2="x",
                regs=r.registers,
                spill=r.spill_store_bytes + r.spill_load_bytes,
                slots=k.n_slots,
            )
        )
        print(out[-1], flush=True)
Path(f"{root}/configs.json").write_text(json.dumps(out))
