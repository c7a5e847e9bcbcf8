#!/bin/bash
# One lent GPU call (from the repository root): README's GPU command, the whole benchmark run (validation profile),
# and the toolchain gate (--retune-check) on an A/A pair and on a planted slow winner.
#   STAGES="readme perf gate" bash evidence/autotune-gate/scripts/gpu.sh
# Everything lands in $OUT/w and comes back as $OUT/bundle.tgz (plus the logs beside it).
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../../.."
stages=${STAGES:-"readme perf gate"}
w=$OUT/w; mkdir -p "$w"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "gpu: $gpu  cores: $(nproc)" | tee "$w/machine.txt"
python -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)" | tee -a "$w/machine.txt"
pt="python -m pytest --backend=cuda -p no:cacheprovider"
stage() { local name=$1 limit=$2; shift 2; local t0=$(date +%s)
  timeout -s INT "$limit" "$@" > "$w/$name.log" 2>&1; local rc=$?
  echo "$name: exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$w/stages.txt"; tail -n 3 "$w/$name.log"; }
if [[ $stages == *readme* ]]; then
  stage readme 200 $pt -n auto --results-dir="$w/readme"
fi
if [[ $stages == *perf* ]]; then
  stage perf 240 $pt -n auto -m perf --hypothesis-profile=validation --results-dir="$w/perf"
  grep -E "^autotune" "$w/perf.log" | head -3
fi
if [[ $stages == *gate* ]]; then
  K=${GATE_KERNELS:-gelu,vector_add}
  arch_file=${ARCH_FILE:-sm_90.json}
  python evidence/autotune-gate/scripts/plant_slow_winner.py "$w/planted-caches" "$arch_file" gelu bf16 M=16384,N=16384 \
    | tee "$w/planted.txt"
  g="$pt -m perf --hypothesis-profile=validation --kernels=$K"
  stage gate-base 150 $g --results-dir="$w/gate-base"
  stage gate-aa 240 $g --retune-check=$K --results-dir="$w/gate-aa"
  stage gate-planted 240 $g --retune-check=$K --autotune-dir="$w/planted-caches" --results-dir="$w/gate-planted"
  for c in aa planted; do
    python -m reports compare "$w"/gate-base/run-*.json "$w"/gate-$c/run-*.json --out "$w/compare-$c.md" \
      > "$w/compare-$c.txt" 2>&1
    echo "compare base vs $c: exit $?" | tee -a "$w/stages.txt"; head -n 12 "$w/compare-$c.txt"
  done
fi
cd "$OUT" && tar czf bundle.tgz w && cp w/stages.txt . && ls -la "$OUT"
