export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r
python3 -m fusionrcg.campaign bench --inputs .gpu/abl/in --kernel-dir .gpu/abl/k --out $OUT/r/abl --budget 80 > $OUT/r/abl_bench.log 2>&1
tail -26 $OUT/r/abl_bench.log
