#!/usr/bin/env bash
# After the fix of test_benchmarks' import: the checks that failed on it, then the README's GPU command timed
# against the previous main (speed.sh).
set -u
export PYTHONUNBUFFERED=1
R=$PWD
mkdir -p "$OUT/logs"
c() {
  local name=$1; shift
  local s; s=$(date +%s)
  timeout 120 bash -c "$*" > "$OUT/logs/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc $(( $(date +%s) - s )) s | $(tail -1 "$OUT/logs/$name.log")" | tee -a "$OUT/checks.txt"
}
c perf "python -m pytest -m perf --backend=cuda --kernels=vector_add,softmax -n 2 --results-dir=$OUT/runs-perf -p no:cacheprovider"
c gpu-share "python -m pytest tests/test_gpu_share.py -n 4 -q -p no:cacheprovider"
mkdir -p /tmp/their && cp examples/leaky_relu.py /tmp/their/
python -m pip install -q --no-deps --no-build-isolation --target /tmp/site "$R" > "$OUT/logs/install.log" 2>&1
c installed "cd /tmp/their && PYTHONPATH=/tmp/site python -m suite --backend=cuda --kernel-module=leaky_relu.py --kernels=leaky_relu -n 4"
bash .gpu/speed.sh
