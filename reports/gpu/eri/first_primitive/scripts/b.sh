# the bench of both trees, one after the other on the same GPU
export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r
timeout 330 python3 -m fusionrcg.campaign bench --inputs .gpu/fp/cin --kernel-dir $HOME/k --out $OUT/r/eri --budget 300 > $OUT/r/bench.log 2>&1
tail -2 $OUT/r/bench.log
PYTHONPATH=$HOME/site:$PWD/.gpu/fp/old/src timeout 150 python3 -m fusionrcg.campaign bench --inputs .gpu/fp/cold --kernel-dir $HOME/kold --out $OUT/r/old --budget 120 > $OUT/r/bench_old.log 2>&1
tail -2 $OUT/r/bench_old.log
tar czf $OUT/b.tgz -C $OUT r && rm -rf $OUT/r
