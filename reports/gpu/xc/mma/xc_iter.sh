#!/usr/bin/env bash
export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r
python3 .gpu/xc_iter.py $OUT/r/iter_taxol.json > $OUT/r/iter_taxol.log 2>&1
grep -v -i warn $OUT/r/iter_taxol.log | tail -8 | cut -c1-300
ncu --clock-control none -k regex:"kd_potential_group|kd_density_orb" --launch-skip 4 --launch-count 2 \
  --section WarpStateStats --section ComputeWorkloadAnalysis --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --csv --page raw python3 .gpu/prof.py > $OUT/r/stalls.csv 2> $OUT/r/ncu2.log
tail -3 $OUT/r/ncu2.log
python3 - <<'PY'
import csv, os
rows = list(csv.reader(open(os.environ["OUT"] + "/r/stalls.csv")))
i = next(k for k, r in enumerate(rows) if r and r[0] == "ID")
head = rows[i]
for r in rows[i + 2:]:
    d = dict(zip(head, r))
    print(d.get("Kernel Name", "")[:40])
    for k, v in d.items():
        if ("issue_stalled" in k and "ratio" in k) or "pipe_tensor" in k or "duration" in k or "spill" in k.lower() or "throughput.avg.pct" in k:
            print("   ", k, v)
PY
python3 -m pytest -q -x tests/kerneldi/test_xc_gpu.py 2>&1 | tail -3
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/gpu.txt
python3 -c "import cupy, pyscf, gpu4pyscf; print(cupy.__version__, pyscf.__version__, gpu4pyscf.__version__)" >> $OUT/r/gpu.txt
