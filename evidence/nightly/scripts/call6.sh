#!/bin/bash
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name --format=csv,noheader
timeout ${T:-420} python -m pytest --backend=cuda --retune=fp8_quant_rowwise,fp8_scaled_matmul,gelu,matmul,swiglu --co -q -p no:cacheprovider > $OUT/retune2.log 2>&1
echo "rc=$?"; grep -c "autotune \[" $OUT/retune2.log; grep -E "^autotune: " $OUT/retune2.log | tail -5
cp hardware_profiles/autotune/*.json $OUT/
if [ "$PERF" = 1 ]; then
  timeout 300 python -m pytest --backend=cuda -m perf -n auto --kernels=matmul,fp8_scaled_matmul,attention,layernorm_backward,gelu,swiglu,fp8_quant_rowwise --hypothesis-profile=validation -p no:cacheprovider --results-dir=$OUT/perf > $OUT/perf.log 2>&1; echo rc=$?; grep -E "autotune:|passed|failed" $OUT/perf.log | tail -4
  gzip $OUT/perf/*.json
fi
