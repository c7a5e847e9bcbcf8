# Call 1: retune the four kernels whose files changed, benchmark every kernel with that cache, check offline vs
# loaded registers, then a cold and a warm run of the README's GPU command with phase marks.
W=$OUT/w; mkdir -p $W/autotune; cp hardware_profiles/autotune/sm_90.json $W/autotune/
pack() { tar czf $OUT/all.tar.gz -C $W . ; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
TIMEFORMAT='wall %R s'
K=softmax_online,fp8_scaled_matmul,fp8_quant_rowwise,layernorm_backward
{ time timeout 270 python -m pytest --backend=cuda --retune=$K --co -q -p no:cacheprovider --autotune-dir=$W/autotune > $W/retune.log 2>&1; } 2>> $W/times.txt
echo "retune rc $? $(tail -1 $W/times.txt)"; grep "chose" $W/retune.log | cut -c1-200; pack
{ time timeout 150 python -m pytest --backend=cuda -m perf -p no:cacheprovider --autotune-dir=$W/autotune --results-dir=$W/bench > $W/perf.log 2>&1; } 2>> $W/times.txt
echo "perf rc $? $(tail -1 $W/times.txt)"; tail -3 $W/perf.log; pack
timeout 60 python -m pytest --backend=cuda suite/test_compile_matrix.py -k offline_registers -p no:cacheprovider --no-results -q -rA > $W/loaded.log 2>&1
echo "loaded rc $?"; grep -E "passed|failed|PASSED|FAILED" $W/loaded.log | tail -8; pack
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  export T0=$(date +%s.%N) TPLUG_FILE=$W/$name.marks
  { time TRITON_CACHE_DIR=$cache PYTHONPATH=. timeout 150 pytest --backend=cuda -p scratch.tplug -p no:cacheprovider \
      --autotune-dir=$W/autotune --results-dir=$W/runs/$name "$@" > $W/$name.log 2>&1; } 2>> $W/times.txt
  echo "$name rc $? $(tail -1 $W/times.txt)"
  grep "^time in tests\|^timeline\|^lookups\|OOM\|too large" $W/$name.log | cut -c1-400; tail -1 $W/$name.log
  grep main $W/$name.marks
  for m in collection-finish first-test-setup sessionfinish-first unconfigure-last atexit; do
    echo "$m: $(grep " gw.* $m" $W/$name.marks | sort -n | awk 'NR==1{a=$1} {b=$1} END{print a" .. "b}')"; done
  pack
}
run cold /tmp/tc-a -n auto
run warm /tmp/tc-a -n auto
ls -la $OUT
