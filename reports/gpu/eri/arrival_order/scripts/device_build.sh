# install PySCF (copied by the call before), unpack the kernels built on the development machine
# (the verification set up to part of total 10), then build the rest here, largest first
set -u
export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r $HOME/k $HOME/site
python3 -m pip install -q --no-index --no-deps --no-compile --target $HOME/site $HOME/ferry/*.whl
xz -d -T16 < .gpu/k1/kall.txz | tar xf - -C $HOME/k
ls $HOME/k/index | wc -l
time timeout 555 python3 .gpu/scripts/build_desc.py $HOME/k 10 16 480 $OUT/r/build_device.jsonl > $OUT/r/build_device.log 2>&1
wc -l < $OUT/r/build_device.jsonl; grep -c error $OUT/r/build_device.jsonl
