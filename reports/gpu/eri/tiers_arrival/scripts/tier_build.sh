# install PySCF (copied by the call before), then build every kernel of the tier comparison
# (both tiers, J/K, every class up to total 9) with the pipeline's compile settings
set -u
export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r $HOME/k $HOME/site
python3 -m pip install -q --no-index --no-deps --no-compile --target $HOME/site $HOME/ferry/*.whl
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
time timeout 530 python3 -m fusionrcg.campaign kernels --inputs .gpu/s2/cin --kernel-dir $HOME/k --out $OUT/r/build.jsonl --bench-only --jobs 16 --timeout 300 --fallback-ptxas-level 1 > $OUT/r/kernels.log 2>&1
wc -l < $OUT/r/build.jsonl; grep -c error $OUT/r/build.jsonl
