# ket rows read one primitive pair ahead (this tree) against the kernels of 04d5866 (.gpu/fp/old):
# Tier 1 store up to total 6, the two benches back to back on one GPU
export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r $HOME/k $HOME/kold
timeout 250 python3 -m fusionrcg.campaign kernels --inputs .gpu/fp/cold --kernel-dir $HOME/k --out $OUT/r/build.jsonl --bench-only --jobs 8 --timeout 200 > $OUT/r/kernels.log 2>&1 &
PYTHONPATH=$HOME/site:$PWD/.gpu/fp/old/src timeout 250 python3 -m fusionrcg.campaign kernels --inputs .gpu/fp/cold --kernel-dir $HOME/kold --out $OUT/r/build_old.jsonl --bench-only --jobs 8 --timeout 200 > $OUT/r/kernels_old.log 2>&1 &
time wait
grep -c error $OUT/r/build.jsonl $OUT/r/build_old.jsonl
timeout 100 python3 -m fusionrcg.campaign bench --inputs .gpu/fp/cold --kernel-dir $HOME/k --out $OUT/r/eri --budget 80 > $OUT/r/bench.log 2>&1
PYTHONPATH=$HOME/site:$PWD/.gpu/fp/old/src timeout 100 python3 -m fusionrcg.campaign bench --inputs .gpu/fp/cold --kernel-dir $HOME/kold --out $OUT/r/old --budget 80 > $OUT/r/bench_old.log 2>&1
tail -1 $OUT/r/bench.log $OUT/r/bench_old.log
tar czf $OUT/a.tgz -C $OUT r && rm -rf $OUT/r
