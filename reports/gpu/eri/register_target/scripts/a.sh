# register targets for Tier 1 (kernels built on the development machine, .gpu/rt/k.txz)
export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r && rm -rf $HOME/rtk && mkdir -p $HOME/rtk && tar xJf .gpu/rt/k.txz -C $HOME/rtk
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
time timeout 420 python3 .gpu/rt/bench.py $HOME/rtk .gpu/rt $OUT/r/rt.jsonl > $OUT/r/bench.log 2>&1
tail -3 $OUT/r/bench.log
timeout 100 ncu --clock-control none -k regex:"frcg_" --section WarpStateStats --section Occupancy --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis -o $OUT/r/prof python3 .gpu/rt/p.py $HOME/rtk > $OUT/r/ncu.log 2>&1
tail -2 $OUT/r/ncu.log
ncu -i $OUT/r/prof.ncu-rep --page details > $OUT/r/prof.txt 2>&1
ncu -i $OUT/r/prof.ncu-rep --page raw --csv > $OUT/r/raw.csv 2>&1
rm -f $OUT/r/prof.ncu-rep
tar czf $OUT/a.tgz -C $OUT r && rm -rf $OUT/r
