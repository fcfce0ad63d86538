# Tier 2 split store launches against PySCF, (3,3|2,2) included (kernels from .gpu/rt7's kv,
# built on the development machine; the tier2-only controls are built here)
export PYTHONPATH=$HOME/site:$PWD/src FUSIONRCG_KERNEL_DIR=$HOME/kv
mkdir -p $OUT/r $HOME/kv && tar xJf .gpu/rt8/kv.txz -C $HOME/kv
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
for b in cc-pvqz ano-rcc; do timeout 250 python3 .gpu/rt8/split.py $OUT/r/split_$b.jsonl $b > $OUT/r/split_$b.log 2>&1; tail -3 $OUT/r/split_$b.log; done
tar czf $OUT/a.tgz -C $OUT r && rm -rf $OUT/r
