# final tree: every class up to total 9 against PySCF on the GPU, the GPU tests (the (4,4|4,4)
# case deselected: its kernel takes 10 min to build), and ncu on the slot-bound classes
export PYTHONPATH=$HOME/site:$PWD/src FUSIONRCG_KERNEL_DIR=$HOME/k
mkdir -p $OUT/r $HOME/k
nvidia-smi > $OUT/r/nvidia-smi.txt 2>&1
time timeout 400 python3 .gpu/v/prebuild.py $HOME/k 15 > $OUT/r/prebuild.log 2>&1
grep -c FAILED $OUT/r/prebuild.log; wc -l < $OUT/r/prebuild.log
timeout 120 python3 .gpu/v/verify.py $OUT/r/verify.jsonl > $OUT/r/verify.log 2>&1
tail -3 $OUT/r/verify.log
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/fusionrcg/test_gpu.py --deselect "tests/fusionrcg/test_gpu.py::test_gpu_matches_pyscf[ls4]" > $OUT/r/test_gpu.txt 2>&1
tail -3 $OUT/r/test_gpu.txt
timeout 200 ncu --clock-control none -k regex:"frcg_" --section WarpStateStats --section Occupancy --section SchedulerStats --section InstructionStats -o $OUT/r/prof python3 .gpu/v/p.py > $OUT/r/ncu.log 2>&1
tail -2 $OUT/r/ncu.log
ncu -i $OUT/r/prof.ncu-rep --page details > $OUT/r/prof.txt 2>&1
ncu -i $OUT/r/prof.ncu-rep --page raw --csv > $OUT/r/raw.csv 2>&1
rm -f $OUT/r/prof.ncu-rep
tar czf $OUT/a.tgz -C $OUT r && rm -rf $OUT/r
