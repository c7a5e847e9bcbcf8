# Retune cross_entropy (its inputs now draw on the device), the all-kernel benchmark run with the complete cache,
# then the suite with the default worker count from an empty Triton cache and warm, and with twice the default.
set -x
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
mkdir -p $OUT/autotune && cp hardware_profiles/autotune/sm_90.json $OUT/autotune/
time timeout 60 python -m pytest --backend=cuda --retune=cross_entropy --co -q -p no:cacheprovider --autotune-dir=$OUT/autotune > $OUT/retune.log 2>&1
echo retune rc $?
grep "chose\|no config" $OUT/retune.log | cut -c1-160
time timeout 130 python -m pytest --backend=cuda -m perf -p no:cacheprovider --autotune-dir=$OUT/autotune --results-dir=$OUT/bench > $OUT/perf.log 2>&1
echo perf rc $?
tail -4 $OUT/perf.log
export TRITON_CACHE_DIR=/tmp/triton-cache-a
time timeout 150 python -m pytest --backend=cuda -n auto -p no:cacheprovider --autotune-dir=$OUT/autotune --results-dir=$OUT/cold > $OUT/cold.log 2>&1
echo cold rc $?
grep -A3 "^time in tests" $OUT/cold.log; tail -2 $OUT/cold.log
time timeout 90 python -m pytest --backend=cuda -n auto -p no:cacheprovider --autotune-dir=$OUT/autotune --results-dir=$OUT/warm > $OUT/warm.log 2>&1
echo warm rc $?
grep -A3 "^time in tests" $OUT/warm.log; tail -2 $OUT/warm.log
export TRITON_CACHE_DIR=/tmp/triton-cache-b
time timeout 150 python -m pytest --backend=cuda -n 32 -p no:cacheprovider --autotune-dir=$OUT/autotune --results-dir=$OUT/cold32 > $OUT/cold32.log 2>&1
echo cold32 rc $?
grep -A3 "^time in tests\|gpu share\|retried" $OUT/cold32.log | head; tail -2 $OUT/cold32.log
