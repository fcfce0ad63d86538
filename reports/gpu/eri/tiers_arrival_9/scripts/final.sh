# fresh machine: PySCF and the verification kernels of total 10-16 (built on the development
# machine) copied by the calls before and this one. Every class of total 10-16 against PySCF while the
# kernels of the total-9 tier comparison and of the GPU tests build; then both tiers on the
# total-9 classes
set -u
export PYTHONPATH=$HOME/site:$PWD/src FUSIONRCG_KERNEL_DIR=$HOME/k
mkdir -p $OUT/r $HOME/k $HOME/site
python3 -m pip install -q --no-index --no-deps --no-compile --target $HOME/site $HOME/ferry/*.whl
cp .gpu/c2/* $HOME/ferry/
cat $HOME/ferry/kv_hi.part.* | xz -d -T16 | tar xf - -C $HOME/k
xz -d -T16 < $HOME/ferry/kv10.txz | tar xf - -C $HOME/k
ls $HOME/k/index | wc -l
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
timeout 420 python3 .gpu/s2/device_build.py $HOME/k .gpu/s2/cin9/plan.json 15 $OUT/r/build.jsonl > $OUT/r/build.log 2>&1 &
timeout 300 python3 .gpu/s2/verify_range.py $OUT/r/verify 10 16 > $OUT/r/verify.log 2>&1
tail -4 $OUT/r/verify.log
time wait
wc -l < $OUT/r/build.jsonl; grep -c error $OUT/r/build.jsonl
timeout 90 python3 -m fusionrcg.campaign bench --inputs .gpu/s2/cin9 --kernel-dir $HOME/k --out $OUT/r/eri --budget 60 > $OUT/r/bench.log 2>&1
tail -2 $OUT/r/bench.log
