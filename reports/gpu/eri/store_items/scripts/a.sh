# store launches of split quartets with their items summed (this tree, default --max-work 64)
# against one item per quartet (--max-work 0), same kernels, Tier 1 store up to total 6,
# split / whole / split back to back; then the GPU tests
export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r $HOME/k $HOME/kv
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
timeout 250 python3 -m fusionrcg.campaign kernels --inputs .gpu/rt3/in --kernel-dir $HOME/k --out $OUT/r/build.jsonl --bench-only --jobs 8 --timeout 240 > $OUT/r/kernels.log 2>&1 &
FUSIONRCG_KERNEL_DIR=$HOME/kv timeout 280 python3 .gpu/rt3/prebuild.py $HOME/kv 8 > $OUT/r/prebuild.log 2>&1 &
time wait
grep -c error $OUT/r/build.jsonl; grep -c FAILED $OUT/r/prebuild.log
timeout 100 python3 -m fusionrcg.campaign bench --inputs .gpu/rt3/in --kernel-dir $HOME/k --out $OUT/r/split --budget 80 > $OUT/r/bench_split.log 2>&1
timeout 100 python3 -m fusionrcg.campaign bench --inputs .gpu/rt3/in --kernel-dir $HOME/k --out $OUT/r/whole --budget 80 --max-work 0 > $OUT/r/bench_whole.log 2>&1
timeout 100 python3 -m fusionrcg.campaign bench --inputs .gpu/rt3/in --kernel-dir $HOME/k --out $OUT/r/split2 --budget 80 > $OUT/r/bench_split2.log 2>&1
tail -n 1 $OUT/r/bench_split.log $OUT/r/bench_whole.log $OUT/r/bench_split2.log
FUSIONRCG_KERNEL_DIR=$HOME/kv timeout 200 python3 -m pytest -q -p no:cacheprovider tests/fusionrcg/test_gpu.py --deselect "tests/fusionrcg/test_gpu.py::test_gpu_matches_pyscf[ls4]" > $OUT/r/test_gpu.txt 2>&1
tail -n 3 $OUT/r/test_gpu.txt
tar czf $OUT/a.tgz -C $OUT r && rm -rf $OUT/r
