#!/bin/bash
# The GPU-facing checks of the round's changes, on one GPU, from the repository root of the merged tree (run on a lent
# H100; logs and run files under $OUT/check, packed into $OUT/check.tgz; $OUT/check-summary.txt: one line per check with
# its exit status and pytest's last line). Each check names what it expects.
export PYTHONUNBUFFERED=1
root=$(pwd); w=$OUT/check; mkdir -p "$w"
export TRITON_CACHE_DIR=/tmp/triton-cache-check
py=python
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }  # ONLY="name ...": those checks alone
check() {  # check NAME EXPECT-EXIT TIMEOUT COMMAND...
  local name=$1 expect=$2 limit=$3; shift 3
  want "$name" || return 0
  local t0=$EPOCHREALTIME
  (cd "$root" && timeout "$limit" "$@") > "$w/$name.log" 2>&1
  local rc=$? t1=$EPOCHREALTIME
  printf '%-22s exit %s (expected %s) %5.1f s | %s\n' "$name" "$rc" "$expect" "$(awk "BEGIN{print $t1 - $t0}")" \
    "$(grep -E '^(VERDICT|STILL|RIGHT|NOT CONF)' "$w/$name.log" | head -1 | cut -c1-110) // $(tail -n 1 "$w/$name.log" | tr -d '=' | cut -c1-90)" \
    | tee -a "$w/summary.txt"
}
pt() { $py -m pytest "$@"; }
# FlagGems as it ships (wheels carried in .whl), through its own launchers, on the GPU
if want flag_gems; then $py -m pip install -q --no-deps --no-index --find-links .whl flag-gems==5.0.2 sqlalchemy==2.0.44 pyyaml==6.0.3 \
  > "$w/pip.log" 2>&1; echo "pip flag-gems: exit $?" | tee -a "$w/summary.txt"; fi
check flag_gems 0 300 $py -m pytest --backend=cuda --kernel-module=examples/flag_gems.py --kernels='fg_*' -n 16 --results-dir="$w/flag_gems"
# Numeric checks: the planted fixture fails only for the planted kernels; which shipped kernels flush subnormals on NVIDIA
check numeric 1 240 $py -m pytest suite/test_kernels.py --backend=cuda --kernel-module=tests/fixtures/numeric_checks.py -n 8 --results-dir="$w/numeric"
check subnormal_shipped x 240 $py -m pytest suite/test_kernels.py --backend=cuda --kernel-module=tests/fixtures/subnormal_shipped.py --kernels=vector_add_subnormal,gelu_subnormal,swiglu_subnormal,softmax_subnormal,rmsnorm_subnormal,layernorm_subnormal,cross_entropy_subnormal -n 8 --results-dir="$w/subnormal"
# Python and/or/not masks: right kernels pass on a GPU (not checkable on the interpreter)
check semantic_gaps 0 180 $py -m pytest suite/test_kernels.py --backend=cuda --kernel-module=tests/fixtures/interpreter_gaps.py --kernels=and_masked_add,helper_and_masked_add,scalar_and_add -n 0 --results-dir="$w/gaps"
# A GPU fault: one failure, counted once
check fault 1 240 $py -m pytest suite/test_kernels.py --backend=cuda -n 2 --kernel-module=tests/fixtures/faulting_kernels.py --kernels=zz_fault,vector_add -k fp32 --results-dir="$w/fault"
# A float64 reference too large for the GPU computed on the host
check host_reference 0 240 $py -m pytest suite/test_kernels.py --backend=cuda -n 0 --kernel-module=tests/fixtures/gpu_reference_oom.py --kernels=zz_reference_oom_on_gpu --results-dir="$w/hostref"
# Out of memory: too large for the GPU (not run, named), and a case retried alone
check oom_alone 0 240 $py -m pytest suite/test_kernels.py --backend=cuda -n 0 --kernel-module=tests/fixtures/memory_hungry.py --kernels=zz_oom_alone --results-dir="$w/oom_alone"
check oom_shared 0 240 $py -m pytest suite/test_kernels.py --backend=cuda -n 2 --kernel-module=tests/fixtures/memory_hungry.py --kernels=zz_oom_shared --results-dir="$w/oom_shared"
# Every config at least once, one-program grids and the tampering watch on compiled kernels
check spec_rules 0 300 $py -m pytest suite/test_kernels.py --backend=cuda --kernel-module=examples/rowscale_inplace.py --kernels=rowscale_inplace,vector_add,layernorm_backward -n 8 --results-dir="$w/spec"
# The autotune gate
check retune_check 0 240 $py -m pytest suite/test_kernels.py --backend=cuda --kernels=vector_add --retune-check=vector_add -n 0 --results-dir="$w/gate"
# --export-failures on the GPU: repro.py fails with the suite not importable, passes once fixed
rm -rf /tmp/exp; check export 1 180 $py -m pytest suite/test_kernels.py --backend=cuda --kernel-module=tests/fixtures/export_planted.py --kernels=export_leaky -n 0 --export-failures=/tmp/exp --results-dir="$w/export"
if want export; then
folder=$(ls -d /tmp/exp/*/ | head -1)
(cd "$folder" && env -u PYTHONPATH $py repro.py) > "$w/repro-wrong.log" 2>&1; echo "repro.py (planted): exit $? (expected 1): $(grep -E '^(STILL|RIGHT)' "$w/repro-wrong.log")" | tee -a "$w/summary.txt"
sed 's/x \* PLANTED_SLOPE/x * slope/' tests/fixtures/export_planted.py > /tmp/fixed_leaky.py
(cd "$folder" && env -u PYTHONPATH $py repro.py --module /tmp/fixed_leaky.py) > "$w/repro-fixed.log" 2>&1; echo "repro.py (fixed): exit $? (expected 0): $(grep -E '^(STILL|RIGHT)' "$w/repro-fixed.log")" | tee -a "$w/summary.txt"
fi
# An installed copy started by path: its reproduction line starts with that path and reruns from a shell without it
if want installed; then
$py -m venv --system-site-packages /tmp/tpv > /dev/null && /tmp/tpv/bin/pip install -q --no-deps --no-build-isolation . > "$w/install.log" 2>&1
mkdir -p /tmp/own && sed 's/y = tl.where(x >= 0, x, x \* slope)/y = tl.where(x > 0.5, x, x * slope)/' examples/leaky_relu.py > /tmp/own/leaky_bug.py
(cd /tmp/own && /tmp/tpv/bin/triton-portability --backend=cuda --kernel-module=leaky_bug.py --kernels=leaky_relu -k 'test_matches_reference and fp32' --no-results) > "$w/installed.log" 2>&1
line=$(grep -A1 'reproduce with' "$w/installed.log" | grep -m1 -oE "/tmp/tpv/bin/triton-portability .*")
echo "installed: line: $line" | tee -a "$w/summary.txt"
(cd /tmp/own && env PATH=/usr/bin:/bin bash -c "$line") > "$w/installed-rerun.log" 2>&1; echo "installed rerun without the venv on PATH: exit $? (expected 1): $(grep -m1 'error .* is ' "$w/installed-rerun.log" | cut -c1-120)" | tee -a "$w/summary.txt"
fi
cp "$w/summary.txt" "$OUT/check-summary.txt"
cd "$OUT" && tar czf check.tgz check && ls -la "$OUT"
