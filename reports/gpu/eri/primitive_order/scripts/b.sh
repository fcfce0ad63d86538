export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r
python3 -m fusionrcg.campaign bench --inputs .gpu/jk/cin --kernel-dir $HOME/k --out $OUT/r/eri --budget 420 > $OUT/r/bench.log 2>&1
tail -3 $OUT/r/bench.log
