#!/bin/bash
# The final tree on one lent GPU (from the repository root): README's GPU command; the planted out-of-memory
# fixtures with 4 workers on the GPU (the gate's waits now timed); the installed copy from README, run from another
# directory. Everything under $OUT/final, packed into $OUT/final.tgz.
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../../.."
w=$OUT/final; mkdir -p "$w"
{ nvidia-smi --query-gpu=name --format=csv,noheader | head -1; echo "cores: $(nproc)"; git log -1 --format=%H 2>/dev/null
  python -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)"; } \
  | tee "$w/machine.txt"
stage() { local name=$1 limit=$2; shift 2; local t0=$(date +%s)
  timeout -s INT "$limit" "$@" > "$w/$name.log" 2>&1; local rc=$?
  echo "$name: exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$w/stages.txt"; tail -n 2 "$w/$name.log"; }
stage readme 200 python -m pytest --backend=cuda -n auto -p no:cacheprovider --results-dir="$w/readme"
stage oom 150 python -m pytest --backend=cuda -n 4 -p no:cacheprovider --kernel-module=tests/fixtures/memory_hungry.py \
  --kernels='zz_oom_*' --results-dir="$w/oom"
grep -E "GPU sharing|time in tests|waiting at" -A1 "$w/oom.log" | head -8
# The installed copy: a venv that sees the image's torch and triton, the suite installed from its wheel, run
# elsewhere. The wheel is built beforehand from this tree where pip's index is reachable (`pip wheel --no-deps -w .whl .`)
# and carried (the GPU machine reaches no index, so pip cannot fetch the build backend there).
repo=$PWD
stage install 150 bash -c "python -m venv --system-site-packages /tmp/v && /tmp/v/bin/python -m pip install -q --no-deps \
  --no-index '$repo'/.whl/*.whl && cd /tmp && mkdir -p elsewhere && cd elsewhere && cp '$repo/examples/leaky_relu.py' . \
  && /tmp/v/bin/triton-portability --backend=cuda --kernel-module=leaky_relu.py --kernels=leaky_relu -n 2 -p no:cacheprovider \
  --results-dir='$w/installed' && /tmp/v/bin/python -c 'import triton_portability, kernels; print(kernels.__file__)'"
cd "$OUT" && tar czf final.tgz final && cp final/stages.txt . && ls -la
