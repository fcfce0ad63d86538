# The sweep on the H200: sweep_build.py's kernels (built on the development machine) timed
# round-robin per class by ../../slot_reads/sweep/scripts/bench.py (copied to .gpu/sw2).
mkdir -p $OUT/r
PYTHONPATH=$PWD/src timeout 300 python3 .gpu/sw2/bench.py .gpu/sw2 .gpu/in $OUT/r/sweep.jsonl > $OUT/r/sweep.log 2>&1
