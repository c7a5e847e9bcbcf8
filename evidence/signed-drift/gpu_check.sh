#!/bin/bash
# The signed-drift rule (suite/checks/drift.py) on a GPU: the shipped kernels that reduce over a length, under the
# nightly profile (200 examples each, the GPU's long reductions: matmul's K to 8192), must pass; the planted
# truncating matmul must still fail. Writes under $OUT (default ./out): the run files and each run's last lines.
# From the repository root on the GPU machine:  bash evidence/signed-drift/gpu_check.sh
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
timeout ${SHIPPED_TIMEOUT:-420} python -m pytest suite/test_kernels.py --backend=auto -n auto --hypothesis-profile=nightly \
  --kernels=matmul,attention,layernorm,rmsnorm,softmax,cross_entropy \
  --results-dir="$OUT/shipped" -p no:cacheprovider -q > "$OUT/shipped.log" 2>&1
echo "shipped: exit $? (124: cut off at ${SHIPPED_TIMEOUT:-420} s; the run file says which tests ran)" | tee "$OUT/summary.txt"
python -m pytest suite/test_kernels.py --backend=auto -n 4 --kernel-module=tests/fixtures/drift_kernels.py \
  --kernels=truncating_matmul,rounded_up_matmul,rounding_matmul,rounding_matmul_signed \
  --results-dir="$OUT/planted" -p no:cacheprovider -q > "$OUT/planted.log" 2>&1
echo "planted: exit $? (1 expected: truncating_matmul and rounded_up_matmul fail on drift)" | tee -a "$OUT/summary.txt"
grep -h "drifts\|VERDICT" "$OUT/shipped.log" "$OUT/planted.log" | cut -c1-400 | tee -a "$OUT/summary.txt"
