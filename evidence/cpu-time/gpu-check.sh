#!/bin/bash
# This afternoon's changes on one lent GPU (from the repository root), everything under $OUT/gpu-check, packed into
# $OUT/gpu-check.tgz:
# - README's GPU command (the compile matrix's default selection is now `defaults`: the summary names it);
# - the same run stopped by SIGINT after 25 s: an interrupted run file holding what finished;
# - the planted out-of-memory fixtures with 4 workers on the GPU (retries alone, too-large cases, the gate's waits);
# - the interpreter on this machine's numpy: the patches' own tests, then README's first command (the interpreter
#   patches of Triton's internals, lints last, the default compile selection), 16 workers;
# - harness tests that start suite runs through the fork server (tests/forkserver.py) on this image's torch.
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
w=$OUT/gpu-check; mkdir -p "$w"
{ nvidia-smi --query-gpu=name --format=csv,noheader | head -1; echo "cores: $(nproc)"; git log -1 --format=%H 2>/dev/null
  python -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)"; } \
  | tee "$w/machine.txt"
stage() { local name=$1 limit=$2; shift 2; local t0=$(date +%s)
  timeout -s INT "$limit" "$@" > "$w/$name.log" 2>&1; local rc=$?
  echo "$name: exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$w/stages.txt"; tail -n 2 "$w/$name.log"; }
stage readme 150 python -m pytest --backend=cuda -n auto -p no:cacheprovider --results-dir="$w/readme"
stage interrupted 25 python -m pytest --backend=cuda -n auto -p no:cacheprovider --results-dir="$w/interrupted"
stage oom 120 python -m pytest --backend=cuda -n 4 -p no:cacheprovider --kernel-module=tests/fixtures/memory_hungry.py \
  --kernels='zz_oom_*' --results-dir="$w/oom"
grep -E "GPU sharing|time in tests|waiting at" -A1 "$w/oom.log" | head -8
stage patches 60 python -m pytest -p no:cacheprovider tests/test_compat.py tests/test_interpreter.py tests/test_deep_stack.py
stage interpret 120 python -m pytest --backend=interpret -n 16 -p no:cacheprovider --results-dir="$w/interpret"
stage harness 110 python -m pytest -n 8 -p no:cacheprovider tests/test_verdicts.py tests/test_usage_checks.py \
  tests/test_harness_selection.py tests/test_gpu_share.py -m "slow or not slow"
cd "$OUT" && tar czf gpu-check.tgz gpu-check && cp gpu-check/stages.txt . && ls -la
