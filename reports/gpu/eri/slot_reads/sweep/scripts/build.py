"""Tier 1 store kernels (full register budget, slot reads early) of the full-budget slot classes
under Phase 1 fixed-register reserves F and Phase 2 register values P2, one kernel dir each."""

import json
import sys
from pathlib import Path

import fusionrcg.orchestration.plan as P
from fusionrcg.angmom import QuartetClass
from fusionrcg.build.library import get_kernel
from fusionrcg.orchestration.tier import RegisterModel

CLASSES = ["2211", "2121", "3111", "2220", "2111", "3210"]
CONFIGS = [
    (130, 32),
    (130, 64),
    (130, 96),
    (150, 32),
    (180, 32),
    (110, 32),
    (150, 64),
    (110, 64),
    (110, 96),
    (96, 96),
    (84, 96),
    (82, 128),
    (96, 128),
]


def main(root):
    out = []
    for F, P2 in CONFIGS:
        P.DEFAULT_MODEL = RegisterModel(
            tier1_phase1_fixed=F, tier1_phase2_values=P2, tier1_occupancy_registers=None
        )
        P.plan_class.cache_clear()
        for tag in CLASSES:
            c = QuartetClass(*map(int, tag))
            k = get_kernel(c, "tier1-only", True, "store", "cuda", "sm_90", f"{root}/k_{F}_{P2}")
            r = k.report
            spill = r.spill_store_bytes + r.spill_load_bytes
            out.append(dict(cls=tag, F=F, P2=P2, regs=r.registers, spill=spill, slots=k.n_slots))
            print(out[-1], flush=True)
    Path(f"{root}/configs.json").write_text(json.dumps(out))


main(sys.argv[1])
