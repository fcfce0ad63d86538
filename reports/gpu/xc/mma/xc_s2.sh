#!/usr/bin/env bash
export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r
python3 .gpu/mma_probe.py 2>&1 | tee $OUT/r/mma_probe.txt | head -4
python3 -m pytest -q -x tests/kerneldi/test_xc_gpu.py > $OUT/r/test_xc_gpu.txt 2>&1; tail -2 $OUT/r/test_xc_gpu.txt
python3 -m kerneldi.bench --out $OUT/r/A --budget 200 --sections sweep --modes fp64-tc \
  --variants 1x1,2x2,4x4 --skip-recompute --molecules organic/113_Taxol > $OUT/r/mma_xc_tzvp.log 2>&1
grep -v -i warn $OUT/r/mma_xc_tzvp.log | tail -12 | cut -c1-400
ncu --clock-control none -k regex:"kd_potential_group|kd_density_orb" --launch-skip 4 --launch-count 2 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --csv --page raw python3 .gpu/prof.py > $OUT/r/mma_ncu.csv 2> $OUT/r/mma_ncu.log
python3 - <<'PY'
import csv, os
rows = list(csv.reader(open(os.environ["OUT"] + "/r/mma_ncu.csv")))
i = next(k for k, r in enumerate(rows) if r and r[0] == "ID")
for r in rows[i + 2:]:
    d = dict(zip(rows[i], r))
    print(d.get("Kernel Name", "")[:40], d.get("gpu__time_duration.sum"), d.get("sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_active"), d.get("sm__inst_executed_pipe_tensor_op_dmma.avg.pct_of_peak_sustained_active"))
PY
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/gpu.txt
python3 -c "import cupy, pyscf, gpu4pyscf; print(cupy.__version__, pyscf.__version__, gpu4pyscf.__version__)" >> $OUT/r/gpu.txt
