#!/bin/bash
# GPU call 4/5: retune layernorm_backward (its kernel changed), and on the H200 attention's WS configs under load.
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "== retune layernorm_backward"
timeout 300 python -m pytest --backend=cuda --retune=layernorm_backward --co -q -p no:cacheprovider > $OUT/retune.log 2>&1
echo "rc=$?"; tail -4 $OUT/retune.log
git status --short hardware_profiles 2>/dev/null
cp hardware_profiles/autotune/*.json $OUT/ 2>/dev/null
if [ "$WS" = 1 ]; then
  echo "== attention WS configs under a nightly's load (15 workers, other kernels)"
  (timeout -s INT 200 python -m pytest --backend=cuda -n 15 --hypothesis-profile=nightly \
     --kernels=cross_entropy,row_argmax,row_sum,swiglu,gelu,layernorm,dropout,softmax,matmul --results-dir=/tmp/load -p no:cacheprovider > $OUT/load.log 2>&1) &
  sleep 30
  python evidence/nightly/scripts/ws_load.py --seconds 150 --out $OUT/ws_load.json > $OUT/ws.log 2>&1
  tail -6 $OUT/ws.log
  wait
  grep -E "GPU sharing|passed|failed" $OUT/load.log | tail -3
fi
if [ "$MAIN" = 1 ]; then
  echo "== README's GPU command (ci profile), after the retune"
  timeout 240 python -m pytest --backend=cuda -n auto -p no:cacheprovider --results-dir=$OUT/main > $OUT/main.log 2>&1
  echo "rc=$?"; grep -E "autotune|GPU sharing|INTERMITTENT|passed|failed" $OUT/main.log | tail -6
  gzip $OUT/main/*.json
fi
