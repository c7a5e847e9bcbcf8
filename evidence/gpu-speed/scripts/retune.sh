# Retune the sm_90 entries that the last kernel edits staled, then the all-kernel benchmark run with that cache.
set -x
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
mkdir -p $OUT/autotune && cp hardware_profiles/autotune/sm_90.json $OUT/autotune/
K=matmul,fp8_scaled_matmul,fp8_quant_rowwise,attention,layernorm_backward
time timeout 330 python -m pytest --backend=cuda --retune=$K --co -q -p no:cacheprovider --autotune-dir=$OUT/autotune > $OUT/retune.log 2>&1
echo retune rc $?
grep -c chose $OUT/retune.log
time timeout 200 python -m pytest --backend=cuda -m perf -p no:cacheprovider --autotune-dir=$OUT/autotune --results-dir=$OUT/bench > $OUT/perf.log 2>&1
echo perf rc $?
tail -8 $OUT/perf.log
