export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
python3 -m fusionrcg.campaign kernels --inputs .gpu/p2/cin --kernel-dir $HOME/k --out $OUT/r/build.jsonl --bench-only --jobs 12 --timeout 300 > $OUT/r/kernels.log 2>&1 &
python3 .gpu/p2/prebuild.py $HOME/k 4 > $OUT/r/prebuild.log 2>&1 &
time wait
grep -c error $OUT/r/build.jsonl; grep -c FAILED $OUT/r/prebuild.log
python3 -m fusionrcg.campaign bench --inputs .gpu/p2/cin --kernel-dir $HOME/k --out $OUT/r/eri --budget 70 > $OUT/r/bench.log 2>&1
tail -2 $OUT/r/bench.log
export FUSIONRCG_KERNEL_DIR=$HOME/k
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/fusionrcg/test_gpu.py -k "not ls4" > $OUT/r/test_gpu.txt 2>&1
tail -4 $OUT/r/test_gpu.txt
