"""Tier 1 store kernels of every class up to total 6 under register targets (placement from a
model with that register budget, __launch_bounds__ holding ptxas to it), one kernel dir each."""

import json
import sys
from pathlib import Path

import fusionrcg.build.library as L
import fusionrcg.orchestration.plan as P
from fusionrcg.angmom import canonical_classes
from fusionrcg.lowering.kernel import KernelSource, lower
from fusionrcg.orchestration.tier import RegisterModel

CONFIGS = [(255, 130), (168, 80), (168, 100), (128, 80), (128, 100)]


def bounded(min_blocks):
    def low(plan, *a, **k):
        ks = lower(plan, *a, **k)
        if not min_blocks:
            return ks
        src = ks.source.replace(
            f"void {ks.name}(", f"void __launch_bounds__(32, {min_blocks}) {ks.name}("
        )
        return KernelSource(**{**ks.__dict__, "source": src})

    return low


def main(root):
    out = []
    for R, F in CONFIGS:
        P.DEFAULT_MODEL = RegisterModel(register_budget=R, tier1_phase1_fixed=F)
        P.plan_class.cache_clear()
        L.lower = bounded(65536 // (R * 32) if R < 255 else 0)
        for c in canonical_classes():
            if c.total > 6:
                continue
            k = L.get_kernel(c, "tier1-only", True, "store", "cuda", "sm_90", f"{root}/k_{R}_{F}")
            r = k.report
            out.append(
                dict(
                    cls="".join(map(str, c.ls)),
                    R=R,
                    F=F,
                    regs=r.registers,
                    spill=r.spill_store_bytes + r.spill_load_bytes,
                    slots=k.n_slots,
                )
            )
            print(out[-1], flush=True)
    Path(f"{root}/configs.json").write_text(json.dumps(out))


main(sys.argv[1])
