"""Tier 1 store throughput of the sweep's kernels (build.py): per class the same quartets for
every config, timed round-robin (three rounds, median of 5 launches each); each config's
integrals checked against the first config's."""

import json
import sys
from pathlib import Path

import numpy as np

from fusionrcg import bench as B
from fusionrcg.angmom import QuartetClass
from fusionrcg.campaign import BASIS_FOR_LMAX
from fusionrcg.lowering.target import Epilogue
from fusionrcg.runtime.basis import SegmentedBasis
from fusionrcg.runtime.gpu import GpuExecutor
from fusionrcg.variants import get_variant

root, bases_dir, out = sys.argv[1:4]
configs = [c for c in json.loads(Path(f"{root}/configs.json").read_text()) if not c["spill"]]
exs = {}
for c in configs:
    exs.setdefault((c["F"], c["P2"]), GpuExecutor(kernel_dir=f"{root}/k_{c['F']}_{c['P2']}"))
first = next(iter(exs.values()))
cp = first.cp
peak = B.fp64_peak(cp)
bases = {n: SegmentedBasis.load(f"{bases_dir}/{n}.npz") for n in ("cc-pvdz", "cc-pvtz", "cc-pvqz")}
classes = sorted({c["cls"] for c in configs}, key=lambda s: (sum(map(int, s)), s))
v = get_variant("tier1-only")
with open(out, "w") as f:
    for tag in classes:
        cls = QuartetClass(*map(int, tag))
        name = BASIS_FOR_LMAX[max(cls.ls)]
        basis = bases[name]
        mine = [c for c in configs if c["cls"] == tag]
        kernels = [exs[(c["F"], c["P2"])].kernel(cls, v, True, Epilogue.STORE) for c in mine]
        nprim = [int(basis.prim[basis.segments_with_l(l), 1].mean()) for l in cls.ls]
        per = kernels[0].flops.per_contracted_quartet(max(1, int(np.prod(nprim))))
        n = int(np.clip(B.TARGET_FLOPS_PER_LAUNCH / max(per, 1), B.MIN_QUARTETS, B.MAX_QUARTETS))
        quartets = B.sample_quartets(basis, cls, n, 0)
        flops, mean_prims = B.quartet_flops(kernels[0].flops, basis, quartets)
        check = quartets[:512]
        ex0 = exs[(mine[0]["F"], mine[0]["P2"])]
        ref = ex0.integrals(kernels[0], check, basis)
        runs, errs = [], []
        for c, k in zip(mine, kernels):
            ex = exs[(c["F"], c["P2"])]
            got = ex.integrals(k, check, basis)
            errs.append(float(np.abs(got - ref).max() / np.abs(ref).max()))
            runs.append(ex.prepare(k, quartets, basis))
        times = [[] for _ in mine]
        for _ in range(3):
            for i, run in enumerate(runs):
                times[i].append(B.event_median(cp, run)[0])
        for c, k, t, e in zip(mine, kernels, times, errs):
            s = float(np.median(t))
            rec = dict(cls=str(cls), total=cls.total, basis=name, F=c["F"], P2=c["P2"],
                       registers=k.report.registers, slots=k.n_slots, n_quartets=n,
                       mean_primitive_quartets=mean_prims, seconds=s, seconds_rounds=t,
                       quartets_per_second=n / s, fraction_of_peak=flops / s / peak,
                       rel_diff_vs_first=e, peak=peak)  # fmt: skip
            f.write(json.dumps(rec) + "\n")
            print(tag, c["F"], c["P2"], k.report.registers, k.n_slots,
                  f"{rec['fraction_of_peak']:.3f}", f"{e:.1e}", flush=True)  # fmt: skip
