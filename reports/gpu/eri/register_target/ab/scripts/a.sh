# the register target (this tree) against the kernels of abcceec (.gpu/rt2/old/src): Tier 1
# store and J/K of the 15 classes it holds to 168 registers, store of all 39 classes up to
# total 6 with this tree; and the kernels of verify.py / test_gpu.py built for b.sh
export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r $HOME/k $HOME/kold $HOME/kv
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
timeout 260 python3 -m fusionrcg.campaign kernels --inputs .gpu/rt2/new --kernel-dir $HOME/k --out $OUT/r/build.jsonl --bench-only --jobs 5 --timeout 250 > $OUT/r/kernels.log 2>&1 &
PYTHONPATH=$HOME/site:$PWD/.gpu/rt2/old/src timeout 260 python3 -m fusionrcg.campaign kernels --inputs .gpu/rt2/old --kernel-dir $HOME/kold --out $OUT/r/build_old.jsonl --bench-only --jobs 4 --timeout 250 > $OUT/r/kernels_old.log 2>&1 &
FUSIONRCG_KERNEL_DIR=$HOME/kv timeout 280 python3 .gpu/rt2/prebuild.py $HOME/kv 6 > $OUT/r/prebuild.log 2>&1 &
time wait
grep -c error $OUT/r/build.jsonl $OUT/r/build_old.jsonl; grep -c FAILED $OUT/r/prebuild.log
timeout 150 python3 -m fusionrcg.campaign bench --inputs .gpu/rt2/new --kernel-dir $HOME/k --out $OUT/r/eri --budget 130 > $OUT/r/bench.log 2>&1
PYTHONPATH=$HOME/site:$PWD/.gpu/rt2/old/src timeout 100 python3 -m fusionrcg.campaign bench --inputs .gpu/rt2/old --kernel-dir $HOME/kold --out $OUT/r/old --budget 80 > $OUT/r/bench_old.log 2>&1
tail -1 $OUT/r/bench.log $OUT/r/bench_old.log
tar czf $OUT/a.tgz -C $OUT r && rm -rf $OUT/r
