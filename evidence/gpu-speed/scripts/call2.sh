# Call 2: the README's GPU command as committed: cold, warm, warm again; a warm run with the workers finalizing as
# before (A/B of WorkerExit); twice the default workers from cold; the benchmarks with the shipped cache.
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/all.tar.gz -C $W . ; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
TIMEFORMAT='wall %R s'
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  export T0=$(date +%s.%N) TPLUG_FILE=$W/$name.marks
  { time TRITON_CACHE_DIR=$cache PYTHONPATH=. timeout 150 pytest --backend=cuda -p scratch.tplug -p no:cacheprovider \
      --results-dir=$W/runs/$name "$@" > $W/$name.log 2>&1; } 2>> $W/times.txt
  echo "$name rc $? $(tail -1 $W/times.txt)"
  grep "^time in tests\|^timeline\|^lookups\|OOM\|too large\|oom" $W/$name.log | cut -c1-400; tail -1 $W/$name.log
  grep main $W/$name.marks | tr '\n' ';'; echo
  for m in collection-finish first-test-setup unconfigure-first atexit; do
    echo "$m: $(grep " gw.* $m" $W/$name.marks | sort -n | awk 'NR==1{a=$1} {b=$1} END{print a" .. "b}')"; done
  pack
}
run cold /tmp/tc-a -n auto
run warm /tmp/tc-a -n auto
run warm2 /tmp/tc-a -n auto
TPLUG_SLOWEXIT=1 run warm-slowexit /tmp/tc-a -n auto
run cold32 /tmp/tc-b -n 32
grep -i "gpu memory\|retried\|too large" $W/cold32.log | head -5
{ time timeout 150 python -m pytest --backend=cuda -m perf -p no:cacheprovider --results-dir=$W/bench > $W/perf.log 2>&1; } 2>> $W/times.txt
echo "perf rc $? $(tail -1 $W/times.txt)"; tail -1 $W/perf.log; pack
ls -la $OUT
