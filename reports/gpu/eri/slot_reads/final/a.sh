# Tier 1 slot reads plain and the denser placements, the most room for ptxas per warp level
# (this tree, kernels k_f) against the volatile slots of 3fbaaea (old/src, kernels k_old), store
# and J/K up to total 6, two rounds interleaved; kernels built on the development machine
export PYTHONPATH=$HOME/site:$PWD/src
R=.gpu/rt7
mkdir -p $OUT/r $HOME/k_old $HOME/k_f $HOME/kv
tar xJf $R/k_old.txz -C $HOME/k_old; tar xJf $R/k_f.txz -C $HOME/k_f; tar xJf $R/kv.txz -C $HOME/kv
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
for run in f1 old1 f2 old2; do
  t=${run%?}
  if [ $t = old ]; then sp=$HOME/site:$PWD/$R/old/src; else sp=$HOME/site:$PWD/src; fi
  PYTHONPATH=$sp timeout 140 python3 -m fusionrcg.campaign bench --inputs $R --kernel-dir $HOME/k_$t --out $OUT/r/$run --budget 110 > $OUT/r/$run.log 2>&1
  tail -1 $OUT/r/$run.log
done
tar czf $OUT/a.tgz -C $OUT r && rm -rf $OUT/r
