# the ERI GPU tests on the machine the calls before set up (kernels in $HOME/k)
set -u
export PYTHONPATH=$HOME/site:$PWD/src FUSIONRCG_KERNEL_DIR=$HOME/k
{ timeout 400 python3 -m pytest -v -p no:cacheprovider --durations=0 tests/fusionrcg/test_gpu.py 2>&1
  python3 -c "import cupy, pyscf, numpy; print('cupy', cupy.__version__, 'pyscf', pyscf.__version__, 'numpy', numpy.__version__)"
  nvidia-smi --query-gpu=name,driver_version --format=csv; } > $OUT/test_gpu.txt
tail -3 $OUT/test_gpu.txt
