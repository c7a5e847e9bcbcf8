mkdir -p $OUT/autotune && cp hardware_profiles/autotune/sm_90.json $OUT/autotune/
K=dropout,softmax_online,layernorm_backward,attention,matmul,fp8_scaled_matmul,fp8_quant_rowwise,gelu,swiglu
time timeout 420 python -m pytest --backend=cuda --retune=$K --co -q -p no:cacheprovider --autotune-dir=$OUT/autotune > $OUT/retune.log 2>&1
echo retune rc $?
grep -c chose $OUT/retune.log
time timeout 130 python -m pytest --backend=cuda -m perf -p no:cacheprovider --autotune-dir=$OUT/autotune --results-dir=$OUT/bench > $OUT/perf.log 2>&1
echo perf rc $?
tail -12 $OUT/perf.log
