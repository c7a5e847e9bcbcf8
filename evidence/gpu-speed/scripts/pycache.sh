# Bytecode cached by the suite (suite/pycache.py) on top of split tests and the GPU start-up in a thread: the README's
# command cold (the machine's first run: the controller's own imports fill the bytecode cache), warm twice, and
# cold again with an empty Triton cache (the bytecode cache as a runner keeps it between runs).
set -x
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; env | grep PYTHONDONT
TIMEFORMAT='wall %R s, user %U s, sys %S s'
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  { time TRITON_CACHE_DIR=$cache timeout 170 pytest --backend=cuda -n auto -p no:cacheprovider \
      --results-dir=$OUT/runs/$name "$@" > $OUT/$name.log 2>&1; } 2> $OUT/$name.time
  echo "$name rc $? $(cat $OUT/$name.time)"
  grep -A6 "^time in tests" $OUT/$name.log | cut -c1-400; tail -1 $OUT/$name.log
}
run cold /tmp/tc-1
run warm /tmp/tc-1
run warm2 /tmp/tc-1
run cold2 /tmp/tc-2
du -sh ~/.cache/portability-suite/pycache
cd $OUT && tar czf runs.tar.gz runs *.log *.time && rm -rf runs *.log *.time && ls -la $OUT
