set -x
mkdir -p $OUT/autotune && cp hardware_profiles/autotune/sm_90.json $OUT/autotune/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $OUT/gpu.txt
K=dropout,softmax_online,layernorm_backward,attention
time timeout 300 python -m pytest --backend=cuda --retune=$K --co -q -p no:cacheprovider --autotune-dir=$OUT/autotune > $OUT/retune.log 2>&1
tail -3 $OUT/retune.log
time timeout 120 python -m pytest --backend=cuda -m perf --kernels=$K -p no:cacheprovider --autotune-dir=$OUT/autotune --results-dir=$OUT/bench > $OUT/perf.log 2>&1
tail -30 $OUT/perf.log
time timeout 120 python scratch/sweep.py gelu > $OUT/sweep-gelu.log 2>&1
grep best $OUT/sweep-gelu.log
