# Call 3: retune the fp8 kernels (their file changed), the benchmarks with that cache, then the README's GPU command
# cold, warm and warm again with it.
W=$OUT/w; mkdir -p $W/autotune; cp hardware_profiles/autotune/sm_90.json $W/autotune/
pack() { tar czf $OUT/all.tar.gz -C $W . ; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
TIMEFORMAT='wall %R s'
{ time timeout 150 python -m pytest --backend=cuda --retune=fp8_scaled_matmul,fp8_quant_rowwise --co -q -p no:cacheprovider --autotune-dir=$W/autotune > $W/retune.log 2>&1; } 2>> $W/times.txt
echo "retune rc $? $(tail -1 $W/times.txt)"; grep "chose\|fp8_scaled_matmul.*config" $W/retune.log | cut -c1-180; pack
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  export T0=$(date +%s.%N) TPLUG_FILE=$W/$name.marks
  { time TRITON_CACHE_DIR=$cache PYTHONPATH=. timeout 150 pytest --backend=cuda -p scratch.tplug -p no:cacheprovider \
      --autotune-dir=$W/autotune --results-dir=$W/runs/$name "$@" > $W/$name.log 2>&1; } 2>> $W/times.txt
  echo "$name rc $? $(tail -1 $W/times.txt)"
  grep "^time in tests\|^timeline\|^autotune\|OOM\|too large" $W/$name.log | cut -c1-400; tail -1 $W/$name.log
  grep main $W/$name.marks | tr '\n' ';'; echo
  for m in collection-finish first-test-setup unconfigure-first; do
    echo "$m: $(grep " gw.* $m" $W/$name.marks | sort -n | awk 'NR==1{a=$1} {b=$1} END{print a" .. "b}')"; done
  pack
}
run cold /tmp/tc-a -n auto
run warm /tmp/tc-a -n auto
run warm2 /tmp/tc-a -n auto
{ time timeout 170 python -m pytest --backend=cuda -m perf -p no:cacheprovider --autotune-dir=$W/autotune --results-dir=$W/bench > $W/perf.log 2>&1; } 2>> $W/times.txt
echo "perf rc $? $(tail -1 $W/times.txt)"; tail -1 $W/perf.log; pack
ls -la $OUT
