# Tier 1 slot reads plain, slot writes through st.shared asm (working tree, kernels k_c) against
# the volatile slots of HEAD (old/src, kernels k_old); both built on the development machine
export PYTHONPATH=$PWD/src
mkdir -p $OUT/r
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
for run in c1 old1 c2 old2; do
  t=${run%?}
  if [ $t = old ]; then sp=$PWD/.gpu/rt6/old/src; else sp=$PWD/src; fi
  PYTHONPATH=$sp timeout 170 python3 -m fusionrcg.campaign bench --inputs .gpu/rt6 --kernel-dir .gpu/rt6/k_$t --out $OUT/r/$run --budget 140 > $OUT/r/$run.log 2>&1
  tail -1 $OUT/r/$run.log
done
tar czf $OUT/a.tgz -C $OUT r && rm -rf $OUT/r
