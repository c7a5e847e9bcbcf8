# Call B: retune the three kernels whose files changed (layernorm_backward, softmax_online, gelu), the benchmarks
# of every kernel with that cache, then the README's GPU command cold and warm with it.
W=$OUT/w; mkdir -p $W/autotune; cp hardware_profiles/autotune/sm_90.json $W/autotune/
pack() { tar czf $OUT/all.tar.gz -C $W . ; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
TIMEFORMAT='wall %R s'
{ time timeout 250 python -m pytest --backend=cuda --retune=layernorm_backward,softmax_online,gelu --co -q -p no:cacheprovider --autotune-dir=$W/autotune > $W/retune.log 2>&1; } 2>> $W/times.txt
echo "retune rc $? $(tail -1 $W/times.txt)"; grep "chose" $W/retune.log | cut -c1-200; pack
{ time timeout 170 python -m pytest --backend=cuda -m perf -p no:cacheprovider --autotune-dir=$W/autotune --results-dir=$W/bench > $W/perf.log 2>&1; } 2>> $W/times.txt
echo "perf rc $? $(tail -1 $W/times.txt)"; tail -1 $W/perf.log; pack
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  export T0=$(date +%s.%N) TPLUG_FILE=$W/$name.marks
  { time TRITON_CACHE_DIR=$cache PYTHONPATH=. timeout 100 pytest --backend=cuda -p scratch.tplug -p no:cacheprovider \
      --autotune-dir=$W/autotune --results-dir=$W/runs/$name "$@" > $W/$name.log 2>&1; } 2>> $W/times.txt
  echo "$name rc $? $(tail -1 $W/times.txt)"
  grep "^time in tests\|^timeline\|^autotune\|OOM\|too large" $W/$name.log | cut -c1-300; tail -1 $W/$name.log
  pack
}
run cold /tmp/tc-b -n auto
run warm /tmp/tc-b -n auto
ls -la $OUT
