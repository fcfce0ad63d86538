export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r
python3 -m fusionrcg.campaign bench --inputs .gpu/abl2/in --kernel-dir .gpu/abl2/k --out $OUT/r/abl2 --budget 40 > $OUT/r/abl2_bench.log 2>&1
tail -26 $OUT/r/abl2_bench.log
