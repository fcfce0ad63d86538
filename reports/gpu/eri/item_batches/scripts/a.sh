# the GPU tests with launches batched by items (the (4,4|4,4) case deselected)
export PYTHONPATH=$HOME/site:$PWD/src FUSIONRCG_KERNEL_DIR=$HOME/k
mkdir -p $OUT/r $HOME/k
time timeout 150 python3 .gpu/rt5/prebuild.py $HOME/k 15 > $OUT/r/prebuild.log 2>&1
grep -c FAILED $OUT/r/prebuild.log
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/fusionrcg/test_gpu.py --deselect "tests/fusionrcg/test_gpu.py::test_gpu_matches_pyscf[ls4]" > $OUT/r/test_gpu.txt 2>&1
tail -n 3 $OUT/r/test_gpu.txt
tar czf $OUT/a.tgz -C $OUT r && rm -rf $OUT/r
