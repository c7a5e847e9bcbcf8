#!/usr/bin/env bash
# The GPU check of layouts users pass, for a CUDA machine with the runner's torch and triton, from the repository
# root: OUT=/some/dir bash evidence/reach/gpu_check.sh. Within 9 minutes, everything under $OUT:
#   1. README's GPU command (pytest --backend=cuda -n auto) on the tree as it is: must pass (exit 0). Its run file
#      is in $OUT/clean, its output in $OUT/clean.log.
#   2. evidence/reach/plant.sh's three stride bugs, each planted in a copy of the tree and run on its kernel: each
#      must fail (exit 1). Logs and run files in $OUT/plants.
# Exit 0 only where both hold; $OUT/summary.txt says what each step did.
set -u
OUT=${OUT:?set OUT to the folder the results go to}
mkdir -p "$OUT/plants"
cd "$(dirname "$0")/../.."
start=$(date +%s)
timeout 240 python -m pytest --backend=cuda -n auto -p no:cacheprovider --results-dir="$OUT/clean" \
    > "$OUT/clean.log" 2>&1
clean=$?
{
  echo "clean: README's GPU command exit $clean ($(( $(date +%s) - start )) s): $([ $clean -eq 0 ] && echo PASSED || echo 'NOT PASSED (must be 0)')"
  grep -m1 -E "^VERDICT" "$OUT/clean.log"
} | tee "$OUT/summary.txt"
PLANT_TIMEOUT=90 OUT="$OUT/plants" bash evidence/reach/plant.sh | tee -a "$OUT/summary.txt"
caught=$(grep -c ": run FAILED (exit 1): caught" "$OUT/summary.txt")
echo "plants caught: $caught of 3; total $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
[ $clean -eq 0 ] && [ "$caught" -eq 3 ]
