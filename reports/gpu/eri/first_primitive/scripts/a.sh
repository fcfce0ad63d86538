# kernels: the bench plan (this tree), the store plan with the previous tree (04d5866), and
# the kernels of verify.py and test_gpu.py; (4,4|4,4) built on the development machine
export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r $HOME/k $HOME/kold
tar xzf .gpu/fp/k44.tgz -C $HOME && cp -r $HOME/k44/* $HOME/k/; ls $HOME/k/index | wc -l
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
timeout 530 python3 -m fusionrcg.campaign kernels --inputs .gpu/fp/cin --kernel-dir $HOME/k --out $OUT/r/build.jsonl --bench-only --jobs 6 --timeout 500 > $OUT/r/kernels.log 2>&1 &
timeout 530 python3 .gpu/fp/prebuild.py $HOME/k 8 > $OUT/r/prebuild.log 2>&1 &
PYTHONPATH=$HOME/site:$PWD/.gpu/fp/old/src timeout 530 python3 -m fusionrcg.campaign kernels --inputs .gpu/fp/cold --kernel-dir $HOME/kold --out $OUT/r/build_old.jsonl --bench-only --jobs 2 --timeout 500 > $OUT/r/kernels_old.log 2>&1 &
time wait
grep -c error $OUT/r/build.jsonl $OUT/r/build_old.jsonl; grep -c FAILED $OUT/r/prebuild.log; wc -l $OUT/r/prebuild.log
tar czf $OUT/a.tgz -C $OUT r && rm -rf $OUT/r
