export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r $HOME/k
cp -r $HOME/k44/* $HOME/k/ 2>/dev/null; ls $HOME/k/index | wc -l
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
python3 -m fusionrcg.campaign kernels --inputs .gpu/fin2/cin --kernel-dir $HOME/k --out $OUT/r/build.jsonl --bench-only --jobs 12 --timeout 300 > $OUT/r/kernels.log 2>&1 &
python3 .gpu/fin2/prebuild.py $HOME/k 4 > $OUT/r/prebuild.log 2>&1 &
time wait
grep -c error $OUT/r/build.jsonl; grep -c FAILED $OUT/r/prebuild.log
python3 -m fusionrcg.campaign bench --inputs .gpu/fin2/cin --kernel-dir $HOME/k --out $OUT/r/eri --budget 70 > $OUT/r/bench.log 2>&1
tail -2 $OUT/r/bench.log
export FUSIONRCG_KERNEL_DIR=$HOME/k
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/fusionrcg/test_gpu.py > $OUT/r/test_gpu.txt 2>&1
tail -4 $OUT/r/test_gpu.txt
python3 -m fusionrcg.campaign bench --inputs .gpu/fin2/cin0 --kernel-dir $HOME/k --out $OUT/r/nosplit --budget 40 --max-work 0 > $OUT/r/nosplit.log 2>&1
tail -2 $OUT/r/nosplit.log
