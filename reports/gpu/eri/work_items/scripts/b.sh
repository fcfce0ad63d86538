export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r
python3 -m fusionrcg.campaign bench --inputs .gpu/fin2/cin --kernel-dir $HOME/k --out $OUT/r/eri --budget 150 > $OUT/r/bench.log 2>&1
tail -2 $OUT/r/bench.log
