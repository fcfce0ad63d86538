# A/B of the kernel library on the H200: the Tier 1 store kernels of total 4-6 (plan.json),
# built on the development machine from the previous tree (7945550^, kbase) and from 7945550
# (knew), measured alternately in two rounds. Inputs: python -m fusionrcg.campaign prepare.
mkdir -p $OUT/r
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
for pass in 1 2; do
PYTHONPATH=$PWD/.gpu/basesrc timeout 100 python3 -m fusionrcg.campaign bench --inputs .gpu/in --kernel-dir .gpu/kbase --out $OUT/r/base$pass --budget 80 > $OUT/r/base$pass.log 2>&1
PYTHONPATH=$PWD/src timeout 100 python3 -m fusionrcg.campaign bench --inputs .gpu/in --kernel-dir .gpu/knew --out $OUT/r/new$pass --budget 80 > $OUT/r/new$pass.log 2>&1
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
