mkdir -p $OUT/autotune && cp hardware_profiles/autotune/sm_90.json $OUT/autotune/
K=dropout,matmul,fp8_scaled_matmul,fp8_quant_rowwise
time timeout 200 python -m pytest --backend=cuda --retune=$K --co -q -p no:cacheprovider --autotune-dir=$OUT/autotune > $OUT/retune2.log 2>&1
echo retune rc $?
grep chose $OUT/retune2.log | cut -c1-200
time timeout 140 python -m pytest --backend=cuda -m perf -p no:cacheprovider --autotune-dir=$OUT/autotune --results-dir=$OUT/bench > $OUT/perf.log 2>&1
echo perf rc $?
tail -4 $OUT/perf.log
time timeout 230 python -m pytest --backend=cuda -n auto -p no:cacheprovider --autotune-dir=$OUT/autotune --results-dir=$OUT/suite > $OUT/suite.log 2>&1
echo suite rc $?
tail -15 $OUT/suite.log
