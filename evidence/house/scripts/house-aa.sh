#!/usr/bin/env bash
# With Hypothesis's local constants off: the README's GPU command twice (cold, then warm) and the two runs' drawn
# cases compared (16 workers hand tests out by timing, so worker histories differ between the runs).
set -u
mkdir -p "$OUT/logs"
nvidia-smi -L | tee "$OUT/times.txt"
for name in cold warm; do
  s=$(date +%s%N)
  TRITON_CACHE_DIR=/tmp/c-aa pytest --backend=cuda -n auto --results-dir="$OUT/runs-$name" -p no:cacheprovider > "$OUT/logs/$name.log" 2>&1
  rc=$?; ms=$(( ($(date +%s%N) - s) / 1000000 ))
  echo "$name rc=$rc $((ms / 1000)).$(( (ms % 1000) / 100 )) s $(tail -1 "$OUT/logs/$name.log")" | tee -a "$OUT/times.txt"
done
python evidence/house/scripts/same_cases.py "$OUT"/runs-cold/run-*.json "$OUT"/runs-warm/run-*.json | tee "$OUT/aa.txt"
