# The final form on the GPU: the input check, and the kernels whose inputs use the stream's integers, uniforms and
# special values, from an empty Triton cache.
set -x
export TRITON_CACHE_DIR=/tmp/triton-cache-v
time timeout 200 python -m pytest --backend=cuda -n auto -p no:cacheprovider suite/test_hazards.py suite/test_kernels.py --kernels='row_*,cross_entropy,vector_add,dropout' --results-dir=$OUT/verify > $OUT/verify.log 2>&1
echo verify rc $?
grep -A2 "^time in tests" $OUT/verify.log; tail -3 $OUT/verify.log
