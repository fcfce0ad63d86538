# every class of total 10-16 against PySCF on the GPU with split store launches (kernels built
# on the development machine, .gpu/rt9/k.txz)
export PYTHONPATH=$HOME/site:$PWD/src FUSIONRCG_KERNEL_DIR=$HOME/k9
mkdir -p $OUT/r $HOME/k9 && tar xJf $HOME/k9.txz -C $HOME/k9
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
timeout 170 python3 .gpu/rt9/verify.py $OUT/r/verify.jsonl > $OUT/r/verify.log 2>&1
tail -3 $OUT/r/verify.log
tar czf $OUT/a.tgz -C $OUT r && rm -rf $OUT/r
