#!/bin/bash
# The final form on one GPU: README's GPU command (its summary's compile line), the harness's fork server, bytecode
# sharing and suite runs through them (the image sets PYTHONDONTWRITEBYTECODE=1).
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
w=$OUT/final; mkdir -p "$w"
{ nvidia-smi --query-gpu=name --format=csv,noheader | head -1; echo "PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE-unset}"
  python -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)"; } > "$w/machine.txt"
stage() { local name=$1 limit=$2; shift 2; local t0=$(date +%s)
  timeout -s INT "$limit" "$@" > "$w/$name.log" 2>&1; local rc=$?
  echo "$name: exit $rc in $(( $(date +%s) - t0 )) s; $(tail -n 1 "$w/$name.log")" | tee -a "$w/stages.txt"; }
stage readme 200 python -m pytest --backend=cuda -n auto -p no:cacheprovider --results-dir="$w/readme"
stage harness 200 python -m pytest -n 8 -p no:cacheprovider tests/test_forkserver.py tests/test_harness_bytecode.py \
  tests/test_harness_selection.py tests/test_verdicts.py tests/test_parts.py tests/test_gpu_share.py -m "slow or not slow"
echo "__pycache__ left in the tree: $(find . -name __pycache__ | wc -l)" | tee -a "$w/stages.txt"
tail -n 30 "$w/readme.log" > "$w/readme-last-screen.txt"
gzip "$w"/readme/run-*.json 2>/dev/null; true
