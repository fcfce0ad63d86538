# every class up to (gg|gg), spherical and Cartesian, cc-pVQZ and ANO-RCC, against PySCF on the
# GPU with equal-l pairs oriented tighter shell first (the runtime's choice; the kernels are
# those of ../tiled_verify, tree 4e45f54, whose kernel fingerprint is unchanged); then the
# GPU tests, (4,4|4,4) and the J/K epilogues included.
# Device calls before this one copied the PySCF wheel and the first half of the kernel
# archive (xz tar of the kernel directory, split in two) into $HOME/ferry.
set -u
export PYTHONPATH=$HOME/site:$PWD/src FUSIONRCG_KERNEL_DIR=$HOME/k
mkdir -p $OUT/r $HOME/k $HOME/site
python3 -m pip install -q --no-index --no-deps --no-compile --target $HOME/site $HOME/ferry/*.whl
cat $HOME/ferry/k.txz.00 .gpu/ov/b/k.txz.01 | xz -d -T16 | tar xf - -C $HOME/k
ls $HOME/k/index | wc -l
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
git rev-parse HEAD > $OUT/r/commit.txt; git status --short >> $OUT/r/commit.txt
time timeout 300 python3 -m fusionrcg.campaign verify --out $OUT/r/eri > $OUT/r/verify.log 2>&1
tail -5 $OUT/r/verify.log
time timeout 200 python3 -m pytest -q -p no:cacheprovider tests/fusionrcg/test_gpu.py > $OUT/r/test_gpu.txt 2>&1
tail -3 $OUT/r/test_gpu.txt
tar czf $OUT/a.tgz -C $OUT r && rm -rf $OUT/r
