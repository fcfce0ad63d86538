export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
time python3 -m fusionrcg.campaign kernels --inputs .gpu/fin/cin --kernel-dir $HOME/k --out $OUT/r/build.jsonl --bench-only --jobs 16 --timeout 300 > $OUT/r/kernels.log 2>&1
grep -c error $OUT/r/build.jsonl
python3 -m fusionrcg.campaign bench --inputs .gpu/fin/cin --kernel-dir $HOME/k --out $OUT/r/eri --budget 70 > $OUT/r/bench.log 2>&1
tail -2 $OUT/r/bench.log
