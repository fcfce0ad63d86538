export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r
python3 -m fusionrcg.campaign bench --inputs .gpu/pw/cin_all --kernel-dir $HOME/k --out $OUT/r/eri --budget 300 > $OUT/r/bench.log 2>&1
tail -3 $OUT/r/bench.log
python3 -m fusionrcg.campaign bench --inputs .gpu/pw/cin_given --kernel-dir $HOME/k --out $OUT/r/given --budget 120 --quartet-order given > $OUT/r/given.log 2>&1
tail -3 $OUT/r/given.log
