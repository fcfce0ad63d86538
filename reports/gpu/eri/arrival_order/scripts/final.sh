# fresh machine: PySCF (copied by the call before) and the development machine's kernels (the
# verification set up to total 10); every class up to total 10 against PySCF; then the
# product's Tier 1 store kernels of total <= 6 (records written as they come)
set -u
export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r $HOME/k $HOME/site
python3 -m pip install -q --no-index --no-deps --no-compile --target $HOME/site $HOME/ferry/*.whl
xz -d -T16 < .gpu/k1/kall.txz | tar xf - -C $HOME/k
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
FUSIONRCG_KERNEL_DIR=$HOME/k timeout 130 python3 .gpu/scripts/verify10.py $OUT/r/eri 10 > $OUT/r/verify.log 2>&1
tail -4 $OUT/r/verify.log
timeout 60 python3 -m fusionrcg.campaign bench --inputs .gpu/fin --kernel-dir .gpu/knew --out $OUT/r/store --budget 35 > $OUT/r/store.log 2>&1
tail -3 $OUT/r/store.log
