# Tier 2 J/K in its three Kernel 2 forms: the tree before the tiled layout (old_src, k_old)
# and at HEAD (src, k_new), old / new / old / new in one command.
set -u
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/gpu.txt
for round in 1 2; do
  for side in old new; do
    if [ $side = old ]; then src=.gpu/t2/old_src; else src=src; fi
    PYTHONPATH=$src python3 -m fusionrcg.campaign bench --inputs .gpu/t2/in --kernel-dir .gpu/t2/k_$side \
      --out $OUT/r/${side}_$round --budget 100 > $OUT/r/${side}_$round.log 2>&1
    tail -n 1 $OUT/r/${side}_$round.log
  done
done
cd $OUT && tar czf r.tgz r && rm -rf r
