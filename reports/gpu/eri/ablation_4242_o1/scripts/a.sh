#!/usr/bin/env bash
# On the GPU machine, after the PySCF wheel was copied to $HOME/ferry: the (4,2|4,2) full,
# no-DSA and Tier 1-only store kernels (no-DSA and Tier 1-only at ptxas -O1, full at -O3) and
# full at -O1, measured by the campaign, then checked against PySCF.
set -u
R=.gpu/a42
export PYTHONPATH=$HOME/site:$PWD/src
python3 -m pip install -q --no-index --no-deps --no-compile --target $HOME/site $HOME/ferry/*.whl
rm -rf $HOME/k $HOME/k_o1 && mkdir -p $HOME/k $HOME/k_o1
tar xJf $R/k.txz -C $HOME/k && tar xJf $R/k_o1.txz -C $HOME/k_o1
nvidia-smi > $OUT/nvidia-smi.txt
mkdir -p $OUT/r $OUT/full_o1
python3 -m fusionrcg.campaign bench --inputs $R/in --kernel-dir $HOME/k --out $OUT/r --budget 240 2>&1 | tee $OUT/r/eri_bench.log
python3 -m fusionrcg.campaign bench --inputs $R/in_full --kernel-dir $HOME/k_o1 --out $OUT/full_o1 --budget 100 2>&1 | tee $OUT/full_o1/eri_bench.log
FUSIONRCG_KERNEL_DIR=$HOME/k timeout 200 python3 $R/check.py k full no-dsa tier1-only | tee $OUT/check.jsonl
FUSIONRCG_KERNEL_DIR=$HOME/k_o1 timeout 100 python3 $R/check.py k_o1 full | tee -a $OUT/check.jsonl
