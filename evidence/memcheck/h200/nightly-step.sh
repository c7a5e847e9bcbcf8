#!/bin/bash
# The nightly's memory-check step (.github/workflows/nightly.yml) on one H200, timed, then three planted
# out-of-bounds reads masked at the store under the same checker. Logs and run files under $OUT.
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/machine.txt
python -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)" | tee -a $OUT/machine.txt
git rev-parse HEAD 2>/dev/null | tee -a $OUT/machine.txt
t0=$EPOCHREALTIME
python -m pytest suite/test_kernels.py --backend=cuda --memcheck --hypothesis-profile=dev -n 4 --results-dir=$OUT/step > $OUT/step.log 2>&1
echo "nightly memcheck step: exit $?, $(awk "BEGIN{printf \"%.1f\", $EPOCHREALTIME - $t0}") s" | tee -a $OUT/summary.txt
tail -n 25 $OUT/step.log
t0=$EPOCHREALTIME
python -m pytest suite/test_kernels.py --backend=cuda --memcheck -n 3 --kernel-module=tests/fixtures/planted_bugs.py \
  --kernels=planted_vector_add_dropped_load_mask,planted_matmul_dropped_load_mask,planted_vector_add_mask_off_by_one \
  -k fp32 --results-dir=$OUT/planted > $OUT/planted.log 2>&1
echo "planted under --memcheck: exit $?, $(awk "BEGIN{printf \"%.1f\", $EPOCHREALTIME - $t0}") s" | tee -a $OUT/summary.txt
tail -n 25 $OUT/planted.log
