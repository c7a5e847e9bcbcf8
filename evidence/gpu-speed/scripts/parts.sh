# Long reference tests split into parts, GPU start-up in a thread while workers collect: cold, warm twice, then
# cold again with the tests whole (the previous durations file: no parts) for an A/B in one call.
set -x
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc
TIMEFORMAT='wall %R s, user %U s, sys %S s'
{ time python -c "import torch, triton; torch.zeros(1, device='cuda')"; } 2>&1 | tail -1
{ time pytest --co -q -p no:cacheprovider --no-results suite > /dev/null; } 2>&1 | tail -1
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  { time TRITON_CACHE_DIR=$cache timeout 170 pytest --backend=cuda -n auto -p no:cacheprovider \
      --results-dir=$OUT/runs/$name "$@" > $OUT/$name.log 2>&1; } 2> $OUT/$name.time
  echo "$name rc $? $(cat $OUT/$name.time)"
  grep -A6 "^time in tests" $OUT/$name.log | cut -c1-400; tail -1 $OUT/$name.log
}
run cold /tmp/tc-p
run warm /tmp/tc-p
run warm2 /tmp/tc-p
SUITE_TEST_COSTS=evidence/gpu-speed/parts/costs-whole.json run cold-whole /tmp/tc-w
cd $OUT && tar czf runs.tar.gz runs && rm -rf runs && ls -la $OUT
