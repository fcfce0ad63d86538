# On the GPU machine. .gpu/prof/in: `python -m fusionrcg.campaign prepare --out .gpu/prof/in
# --paper-quartets "2,0,2,0" --tier-max-total 0 --variants full` (its bases); .gpu/prof/k: the
# Tier 1 store kernels of (2,2|1,1), (2,1|2,1), (3,1|1,1) from `python -m fusionrcg.cli build
# --quartet L --variant tier1-only --kernel-dir .gpu/prof/k` at 38a4216.
set -x
export PYTHONPATH=$PWD/src
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
ncu --version > $OUT/ncu_version.txt
ncu --clock-control none --section SourceCounters --section WarpStateStats --section LaunchStats --section Occupancy --section SpeedOfLight -f -o $OUT/r python3 .gpu/prof/p.py .gpu/prof/k > $OUT/ncu.log 2>&1
tail -5 $OUT/ncu.log
ncu -i $OUT/r.ncu-rep --page raw --csv > $OUT/raw.csv
for c in 2211 2121 3111; do
  ncu -i $OUT/r.ncu-rep --page source --csv --print-source sass --kernel-name regex:frcg_${c} > $OUT/src_${c}.csv 2> $OUT/src_${c}.err
  head -c 600 $OUT/src_${c}.csv; echo; wc -l $OUT/src_${c}.csv
done
ls -la $OUT
