# The README's GPU command as committed at the end (split tests keeping the whole tests' draws, GPU start-up in a
# thread, the timeline): cold, then warm twice.
set -x
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc
TIMEFORMAT='wall %R s, user %U s, sys %S s'
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  { time TRITON_CACHE_DIR=$cache timeout 170 pytest --backend=cuda -n auto -p no:cacheprovider \
      --results-dir=$OUT/runs/$name "$@" > $OUT/$name.log 2>&1; } 2> $OUT/$name.time
  echo "$name rc $? $(cat $OUT/$name.time)"
  grep "^time in tests\|^timeline" $OUT/$name.log | cut -c1-300; tail -1 $OUT/$name.log
}
run cold /tmp/tc-f
run warm /tmp/tc-f
run warm2 /tmp/tc-f
cd $OUT && tar czf runs.tar.gz runs *.log *.time && rm -rf runs *.log *.time && ls -la $OUT
