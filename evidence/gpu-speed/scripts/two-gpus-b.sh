# Two H200s, continued: one GPU with 16 of the host's 32 cores (taskset: a one-GPU node's share), and both GPUs
# with 16 workers in all (8 per GPU) instead of the default 32; cold, then warm.
set -x
nvidia-smi --query-gpu=name --format=csv; nproc
python -c "import torch, triton; print(torch.cuda.device_count())"
TIMEFORMAT='wall %R s, user %U s, sys %S s'
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  { time TRITON_CACHE_DIR=$cache timeout 170 $PREFIX pytest --backend=cuda -p no:cacheprovider \
      --results-dir=$OUT/runs/$name "$@" > $OUT/$name.log 2>&1; } 2> $OUT/$name.time
  echo "$name rc $? $(cat $OUT/$name.time)"
  grep "^portability: .*worker\|^time in tests\|^timeline" $OUT/$name.log | cut -c1-300; tail -1 $OUT/$name.log
}
CUDA_VISIBLE_DEVICES=0 PREFIX="taskset -c 0-15" run cold-one-16cores /tmp/tc-a -n auto
CUDA_VISIBLE_DEVICES=0 PREFIX="taskset -c 0-15" run warm-one-16cores /tmp/tc-a -n auto
run cold-two-16workers /tmp/tc-b -n 16
run warm-two-16workers /tmp/tc-b -n 16
cd $OUT && tar czf runs.tar.gz runs *.log *.time && rm -rf runs *.log *.time && ls -la $OUT
