export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
time python3 -m fusionrcg.campaign kernels --inputs .gpu/bo/cin --kernel-dir $HOME/k --out $OUT/r/build.jsonl --bench-only --jobs 16 --timeout 400 > $OUT/r/kernels.log 2>&1
grep -c error $OUT/r/build.jsonl
python3 -m fusionrcg.campaign bench --inputs .gpu/bo/cin --kernel-dir $HOME/k --out $OUT/r/eri --budget 80 > $OUT/r/bench.log 2>&1
tail -2 $OUT/r/bench.log
export FUSIONRCG_KERNEL_DIR=$HOME/k
timeout 110 python3 -m pytest -q -p no:cacheprovider tests/fusionrcg/test_gpu.py -k "not ls3 and not ls4 and not jk and not bank" > $OUT/r/test_gpu.txt 2>&1
tail -4 $OUT/r/test_gpu.txt
