# both tiers with the J/K epilogue on every class up to total 8 and (3,2|2,2), kernels built by the call before
set -u
export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r
timeout 500 python3 -m fusionrcg.campaign bench --inputs .gpu/s2/cin2 --kernel-dir $HOME/k --out $OUT/r/eri --budget 400 > $OUT/r/bench.log 2>&1
tail -3 $OUT/r/bench.log; wc -l < $OUT/r/eri/measurements.jsonl
