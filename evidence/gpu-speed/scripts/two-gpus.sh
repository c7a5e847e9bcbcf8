# Two H200s against one on the same host: the README's command with both GPUs (-n auto: 16 workers per GPU), and
# with one visible (CUDA_VISIBLE_DEVICES=0: 16 workers), cold (empty Triton cache) then warm, alternating.
set -x
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc
python -c "import torch, triton; print(torch.cuda.device_count())"  # the page cache holds torch's libraries for every run
TIMEFORMAT='wall %R s, user %U s, sys %S s'
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  { time TRITON_CACHE_DIR=$cache timeout 170 pytest --backend=cuda -n auto -p no:cacheprovider \
      --results-dir=$OUT/runs/$name "$@" > $OUT/$name.log 2>&1; } 2> $OUT/$name.time
  echo "$name rc $? $(cat $OUT/$name.time)"
  grep "^portability: .*worker\|^time in tests\|^timeline" $OUT/$name.log | cut -c1-300; tail -1 $OUT/$name.log
}
CUDA_VISIBLE_DEVICES=0 run cold-one /tmp/tc-one
run cold-two /tmp/tc-two
CUDA_VISIBLE_DEVICES=0 run warm-one /tmp/tc-one
run warm-two /tmp/tc-two
CUDA_VISIBLE_DEVICES=0 run warm-one-b /tmp/tc-one
run warm-two-b /tmp/tc-two
cd $OUT && tar czf runs.tar.gz runs *.log *.time && rm -rf runs *.log *.time && ls -la $OUT
