export PYTHONPATH=$HOME/site:$PWD/src
export FUSIONRCG_KERNEL_DIR=$HOME/k
mkdir -p $OUT/r
timeout 250 python3 .gpu/t1/verify.py $OUT/r/verify.jsonl > $OUT/r/verify.log 2>&1
tail -4 $OUT/r/verify.log
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/fusionrcg/test_gpu.py > $OUT/r/test_gpu.txt 2>&1
tail -4 $OUT/r/test_gpu.txt
