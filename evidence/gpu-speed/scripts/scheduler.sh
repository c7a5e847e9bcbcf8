# Tests handed out by expected duration (suite/schedule.py CostScheduling): the suite cold and warm with the
# default workers, and cold with twice the default. CPU time beside each wall time; the run files in one tarball.
set -x
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc
TIMEFORMAT='wall %R s, user %U s, sys %S s'
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  { time TRITON_CACHE_DIR=$cache timeout 170 python -m pytest --backend=cuda -p no:cacheprovider \
      --results-dir=$OUT/runs/$name "$@" > $OUT/$name.log 2>&1; } 2> $OUT/$name.time
  echo "$name rc $? $(cat $OUT/$name.time)"
  grep -A4 "^time in tests" $OUT/$name.log | cut -c1-400; tail -1 $OUT/$name.log
}
run cold /tmp/tc-a -n auto
run warm /tmp/tc-a -n auto
run cold32 /tmp/tc-b -n 32
cd $OUT && tar czf runs.tar.gz runs && rm -rf runs && ls -la $OUT
