#!/usr/bin/env bash
# The cold pair of speed.sh in the other order (the previous main first, on a machine fresh to both), then the two
# GPU checks of checks.sh that need the most time: crash isolation with 16 workers, and the installed runner.
set -u
export PYTHONUNBUFFERED=1
R=$PWD
mkdir -p "$OUT/logs"
cp -r "$R/hardware_profiles" "$R/examples" "$R/.gpu/old/"
python -c "import torch; torch.zeros(1, device='cuda')"
t() {
  local name=$1 dir=$2 cache=$3 s; s=$(date +%s%N)
  (cd "$dir" && TRITON_CACHE_DIR=$cache pytest --backend=cuda -n auto --results-dir="$OUT/runs-$name" -p no:cacheprovider \
      > "$OUT/logs/$name.log" 2>&1)
  local rc=$? ms=$(( ($(date +%s%N) - s) / 1000000 ))
  echo "$name rc=$rc $((ms / 1000)).$(( (ms % 1000) / 100 )) s $(tail -1 "$OUT/logs/$name.log")" | tee -a "$OUT/times.txt"
}
rm -rf /tmp/c-new /tmp/c-old
t old-cold "$R/.gpu/old" /tmp/c-old
t new-cold "$R" /tmp/c-new
s=$(date +%s)
timeout 200 python -m pytest suite/test_kernels.py suite/test_properties.py --backend=cuda -n 16 \
  --kernel-module=tests/fixtures/faulting_kernels.py --kernels=zz_fault,zz_oom,zz_hang,vector_add,softmax,layernorm \
  --case-timeout=20 --results-dir="$OUT/runs-crash" -p no:cacheprovider > "$OUT/logs/crash-16.log" 2>&1
echo "crash-16 rc=$? $(( $(date +%s) - s )) s | $(tail -1 "$OUT/logs/crash-16.log")" | tee -a "$OUT/times.txt"
grep -E "^(FAILED|INCIDENT)" "$OUT/logs/crash-16.log" | cut -c1-200 | tee -a "$OUT/times.txt"
mkdir -p /tmp/their && cp examples/leaky_relu.py /tmp/their/
python -m pip install -q --no-deps --no-build-isolation --target /tmp/site "$R" > "$OUT/logs/install.log" 2>&1
(cd /tmp/their && PYTHONPATH=/tmp/site timeout 120 python -m suite --backend=cuda --kernel-module=leaky_relu.py \
  --kernels=leaky_relu -n 4 > "$OUT/logs/installed.log" 2>&1)
echo "installed rc=$? | $(tail -1 "$OUT/logs/installed.log")" | tee -a "$OUT/times.txt"
tar czf "$OUT/cold.tgz" -C "$OUT" logs $(cd "$OUT" && ls -d runs-*)
