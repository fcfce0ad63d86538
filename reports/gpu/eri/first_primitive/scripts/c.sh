# every class up to total 9 against PySCF on the GPU, then the GPU tests
export PYTHONPATH=$HOME/site:$PWD/src FUSIONRCG_KERNEL_DIR=$HOME/k
mkdir -p $OUT/r
timeout 300 python3 .gpu/fp/verify.py $OUT/r/verify.jsonl > $OUT/r/verify.log 2>&1
tail -3 $OUT/r/verify.log
timeout 250 python3 -m pytest -q -p no:cacheprovider tests/fusionrcg/test_gpu.py > $OUT/r/test_gpu.txt 2>&1
tail -3 $OUT/r/test_gpu.txt
tar czf $OUT/c.tgz -C $OUT r && rm -rf $OUT/r
