# Tier 1 store (total 4-6) and J/K through the store kernel: the tree before the tiled output
# layout (old_src, k_old) and after it (src, k_new), old / new / old / new in one command.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
for round in 1 2; do
  for side in old new; do
    if [ $side = old ]; then src=.gpu/ab/old_src; else src=src; fi
    PYTHONPATH=$src python3 -m fusionrcg.campaign bench --inputs .gpu/ab/in --kernel-dir .gpu/ab/k_$side \
      --out $OUT/${side}_$round --budget 100 > $OUT/${side}_$round.log 2>&1
    tail -n 2 $OUT/${side}_$round.log
  done
done
ls -R $OUT | head -30
