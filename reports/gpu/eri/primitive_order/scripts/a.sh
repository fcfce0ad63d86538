export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
python3 -m fusionrcg.campaign kernels --inputs .gpu/jk/cin --kernel-dir $HOME/k --out $OUT/r/build.jsonl --bench-only --jobs 10 --timeout 500 > $OUT/r/kernels.log 2>&1 &
python3 .gpu/jk/prebuild.py $HOME/k 6 > $OUT/r/prebuild.log 2>&1 &
time wait
grep -c FAILED $OUT/r/prebuild.log; grep FAILED $OUT/r/prebuild.log | head; wc -l $OUT/r/build.jsonl $OUT/r/prebuild.log
