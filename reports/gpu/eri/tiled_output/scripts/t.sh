#!/usr/bin/env bash
# On the GPU machine, after the PySCF wheel was copied to $HOME/ferry: the ERI GPU tests and the
# GPU check against PySCF with the kernels prebuilt on the development machine.
set -u
export PYTHONPATH=$HOME/site:$PWD/src
python3 -m pip install -q --no-index --no-deps --no-compile --target $HOME/site $HOME/ferry/*.whl
rm -rf $HOME/k && mkdir -p $HOME/k && tar xJf .gpu/vf/k.txz -C $HOME/k
export FUSIONRCG_KERNEL_DIR=$HOME/k
mkdir -p $OUT/r
{ timeout 300 python3 -m pytest -v -p no:cacheprovider --durations=0 tests/fusionrcg/test_gpu.py 2>&1
  python3 -c "import cupy, pyscf, numpy; print('cupy', cupy.__version__, 'pyscf', pyscf.__version__, 'numpy', numpy.__version__)"
  nvidia-smi --query-gpu=name,driver_version --format=csv; } > $OUT/r/test_gpu.txt
tail -n 25 $OUT/r/test_gpu.txt
timeout 200 python3 reports/gpu/eri/tier1_slots/scripts/verify.py $OUT/r/verify.jsonl 6 2>&1 | tee $OUT/r/verify.log
cd $OUT && tar czf r.tgz r && rm -rf r
