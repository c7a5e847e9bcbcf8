# Two H200s (32 cores) against one GPU with 16 of the cores (a one-GPU node's share), the README's command in its
# final form: cold, then warm, each.
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
W=$OUT/w; mkdir -p $W
TIMEFORMAT='wall %R s'
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  { time TRITON_CACHE_DIR=$cache timeout 150 $PREFIX pytest --backend=cuda -p no:cacheprovider \
      --results-dir=$W/runs/$name "$@" > $W/$name.log 2>&1; } 2>> $W/times.txt
  echo "$name rc $? $(tail -1 $W/times.txt)"
  grep "^time in tests\|^timeline" $W/$name.log | cut -c1-330; tail -1 $W/$name.log
  tar czf $OUT/all.tar.gz -C $W .
}
run cold-two /tmp/tc-b -n auto
run warm-two /tmp/tc-b -n auto
CUDA_VISIBLE_DEVICES=0 PREFIX="taskset -c 0-15" run cold-one-16cores /tmp/tc-a -n auto
CUDA_VISIBLE_DEVICES=0 PREFIX="taskset -c 0-15" run warm-one-16cores /tmp/tc-a -n auto
