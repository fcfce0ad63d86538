export PYTHONPATH=$HOME/site:$PWD/src
mkdir -p $OUT/r
python3 .gpu/prof2/p.py > $OUT/r/timed.txt 2>&1
cat $OUT/r/timed.txt | grep -v -i warn
ncu --clock-control none -k regex:"frcg_" \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section Occupancy --section SchedulerStats --section LaunchStats --section InstructionStats \
  -o $OUT/r/prof python3 .gpu/prof2/p.py --ncu > $OUT/r/ncu.log 2>&1
tail -3 $OUT/r/ncu.log
ncu -i $OUT/r/prof.ncu-rep --page details > $OUT/r/prof.txt 2>&1
ncu -i $OUT/r/prof.ncu-rep --page raw --csv > $OUT/r/raw.csv 2>&1
grep -E "frcg_|Duration|Throughput|Pipe|Stall|Occupancy|Registers|Issued|Eligible|Active Warps|L1/TEX Hit|L2 Hit" $OUT/r/prof.txt | head -120
