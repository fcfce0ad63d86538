# the kernels of verify.py and test_gpu.py (kv, built on the development machine; what is
# missing is built here) against PySCF on the GPU
export PYTHONPATH=$HOME/site:$PWD/src FUSIONRCG_KERNEL_DIR=$HOME/kv
mkdir -p $OUT/r
timeout 560 python3 .gpu/rt7/verify.py $OUT/r/verify.jsonl > $OUT/r/verify.log 2>&1
tail -4 $OUT/r/verify.log
tar czf $OUT/b.tgz -C $OUT r && rm -rf $OUT/r
