export PYTHONPATH=$HOME/site:$PWD/src
export FUSIONRCG_KERNEL_DIR=$HOME/k
mkdir -p $OUT/r
timeout 400 python3 -m pytest -q -p no:cacheprovider tests/fusionrcg/test_gpu.py > $OUT/r/test_gpu.txt 2>&1
tail -4 $OUT/r/test_gpu.txt
