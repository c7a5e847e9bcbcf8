# The README's GPU command as committed (test durations refreshed from the scheduler run): cold, then warm twice.
set -x
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; git log --oneline -1 2>/dev/null
TIMEFORMAT='wall %R s, user %U s, sys %S s'
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  { time TRITON_CACHE_DIR=$cache timeout 170 pytest --backend=cuda -n auto -p no:cacheprovider \
      --results-dir=$OUT/runs/$name "$@" > $OUT/$name.log 2>&1; } 2> $OUT/$name.time
  echo "$name rc $? $(cat $OUT/$name.time)"
  grep -A4 "^time in tests" $OUT/$name.log | cut -c1-400; tail -1 $OUT/$name.log
}
run cold /tmp/tc-f
run warm /tmp/tc-f
run warm2 /tmp/tc-f
cd $OUT && tar czf runs.tar.gz runs && rm -rf runs && ls -la $OUT
