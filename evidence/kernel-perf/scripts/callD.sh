# Call D: retune the kernels whose files changed ($1) into a copy of the shipped caches, then the benchmarks of
# every kernel with them. On an H200 the retune writes sm_90.h200_sxm.json (sm_90.json's hash is checked).
W=$OUT/w; mkdir -p $W/autotune; cp hardware_profiles/autotune/*.json $W/autotune/
pack() { tar czf $OUT/all.tar.gz -C $W . ; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
sha256sum $W/autotune/*.json > $W/before.sha256
TIMEFORMAT='wall %R s'
{ time timeout 200 python -m pytest --backend=cuda --retune=$1 --co -q -p no:cacheprovider --autotune-dir=$W/autotune > $W/retune.log 2>&1; } 2>> $W/times.txt
echo "retune rc $? $(tail -1 $W/times.txt)"; head -1 $W/retune.log; grep "chose" $W/retune.log | cut -c1-200; sha256sum -c $W/before.sha256; pack
{ time timeout 170 python -m pytest --backend=cuda -m perf -p no:cacheprovider --autotune-dir=$W/autotune --results-dir=$W/bench > $W/perf.log 2>&1; } 2>> $W/times.txt
echo "perf rc $? $(tail -1 $W/times.txt)"; grep "^autotune" $W/perf.log; tail -1 $W/perf.log; pack
