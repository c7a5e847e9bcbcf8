# Call C on an H200: retune kernels ($1, comma-separated) into the H200's own cache file (sm_90.h200_sxm.json), the
# H100's sm_90.json left as it is (checked by its hash); then, with PERF=1, the benchmarks of every kernel.
W=$OUT/w; mkdir -p $W/autotune; cp hardware_profiles/autotune/*.json $W/autotune/
pack() { tar czf $OUT/all.tar.gz -C $W . ; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
sha256sum $W/autotune/sm_90.json > $W/sm_90.sha256
TIMEFORMAT='wall %R s'
{ time timeout ${RETUNE_S:-330} python -m pytest --backend=cuda --retune=$1 --co -q -p no:cacheprovider --autotune-dir=$W/autotune > $W/retune.log 2>&1; } 2>> $W/times.txt
echo "retune rc $? $(tail -1 $W/times.txt)"; head -2 $W/retune.log; grep -c chose $W/retune.log; sha256sum -c $W/sm_90.sha256; ls $W/autotune; pack
if [ -n "$PERF" ]; then
{ time timeout 170 python -m pytest --backend=cuda -m perf -p no:cacheprovider --autotune-dir=$W/autotune --results-dir=$W/bench > $W/perf.log 2>&1; } 2>> $W/times.txt
echo "perf rc $? $(tail -1 $W/times.txt)"; grep "^autotune" $W/perf.log; tail -1 $W/perf.log; pack
fi
