# Tier 1 store (total 4-6) and J/K through the store kernel: the tree without (old_src, k_old)
# and with (src, k_new) the pair-row prefetch, old / new / old / new in one command.
set -u
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/gpu.txt
for round in 1 2; do
  for side in old new; do
    if [ $side = old ]; then src=.gpu/pf/old_src; else src=src; fi
    PYTHONPATH=$src python3 -m fusionrcg.campaign bench --inputs .gpu/pf/in --kernel-dir .gpu/pf/k_$side \
      --out $OUT/r/${side}_$round --budget 100 > $OUT/r/${side}_$round.log 2>&1
    tail -n 1 $OUT/r/${side}_$round.log
  done
done
cd $OUT && tar czf r.tgz r && rm -rf r
