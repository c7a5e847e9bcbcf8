# torch's CPU threads shared among the workers (one each for 16 workers on 16 cores, instead of torch's default of
# 16 each): the suite cold, then warm with and without the sharing (OMP_NUM_THREADS=16 keeps torch's default).
# CPU time (user+sys of pytest and its workers) beside each wall time; run files gzipped to come back.
set -x
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc
TIMEFORMAT='wall %R s, user %U s, sys %S s'
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  { time TRITON_CACHE_DIR=$cache timeout 170 python -m pytest --backend=cuda -p no:cacheprovider \
      --results-dir=$OUT/$name "$@" > $OUT/$name.log 2>&1; } 2> $OUT/$name.time
  echo "$name rc $? $(cat $OUT/$name.time)"
  grep -A4 "^time in tests" $OUT/$name.log | cut -c1-400; tail -1 $OUT/$name.log
  gzip -9 $OUT/$name/*.json
}
run cold /tmp/tc-a -n auto
run warm /tmp/tc-a -n auto
OMP_NUM_THREADS=16 run warm-16-threads /tmp/tc-a -n auto
run warm-again /tmp/tc-a -n auto
ls -la $OUT/*/
