# the product's kernels and runtime (split store launches) against PySCF on the GPU: every
# class up to total 9 spherical and up to total 6 Cartesian (verify.py of tier1_slots/scripts),
# J/K of cc-pVDZ water dimer, and Tier 2 store launches with forced splits (split.py)
export PYTHONPATH=$HOME/site:$PWD/src FUSIONRCG_KERNEL_DIR=$HOME/k
mkdir -p $OUT/r $HOME/k
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
time timeout 330 python3 .gpu/rt4/prebuild.py $HOME/k 15 > $OUT/r/prebuild.log 2>&1
grep -c FAILED $OUT/r/prebuild.log; wc -l < $OUT/r/prebuild.log
timeout 150 python3 .gpu/rt4/verify.py $OUT/r/verify.jsonl > $OUT/r/verify.log 2>&1
tail -3 $OUT/r/verify.log
timeout 90 python3 .gpu/rt4/split.py $OUT/r/split.jsonl > $OUT/r/split.log 2>&1
tail -6 $OUT/r/split.log
tar czf $OUT/a.tgz -C $OUT r && rm -rf $OUT/r
