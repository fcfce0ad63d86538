# the kernels that read the next ket row ahead against PySCF on the GPU
export PYTHONPATH=$HOME/site:$PWD/src FUSIONRCG_KERNEL_DIR=$HOME/kv
mkdir -p $OUT/r $HOME/kv
timeout 200 python3 .gpu/pf/verify_small.py $OUT/r/verify.jsonl > $OUT/r/verify.log 2>&1
cat $OUT/r/verify.log
python3 -c "import json; r=[json.loads(l) for l in open('$OUT/r/verify.jsonl')]; print(len(r), sum(x['passed'] or x.get('engine_right', False) for x in r))"
tar czf $OUT/v.tgz -C $OUT r && rm -rf $OUT/r
