# the kernels of verify.py and test_gpu.py (kv, built on the development machine; what is
# missing is built here) against PySCF on the GPU
export PYTHONPATH=$HOME/site:$PWD/src FUSIONRCG_KERNEL_DIR=$HOME/kv
mkdir -p $OUT/r
timeout 200 python3 .gpu/rt7/verify.py $OUT/r/verify.jsonl > $OUT/r/verify.log 2>&1
tail -4 $OUT/r/verify.log
tar czf $OUT/b.tgz -C $OUT r && rm -rf $OUT/r
# the GPU tests (the (4,4|4,4) case deselected: its kernel takes 10 minutes to build)
export PYTHONPATH=$HOME/site:$PWD/src FUSIONRCG_KERNEL_DIR=$HOME/kv
mkdir -p $OUT/r
timeout 340 python3 -m pytest -q -p no:cacheprovider tests/fusionrcg/test_gpu.py --deselect "tests/fusionrcg/test_gpu.py::test_gpu_matches_pyscf[ls4]" > $OUT/r/test_gpu.txt 2>&1
tail -3 $OUT/r/test_gpu.txt
tar czf $OUT/c.tgz -C $OUT r && rm -rf $OUT/r
