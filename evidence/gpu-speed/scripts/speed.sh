# Retune the entries the input-generator edits staled; then the suite from an empty Triton cache with the default
# worker count, the same again warm, and from an empty cache with twice the default workers.
set -x
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
nproc
python -c "import xdist; print('xdist', xdist.__version__)"
mkdir -p $OUT/autotune && cp hardware_profiles/autotune/sm_90.json $OUT/autotune/
time timeout 100 python -m pytest --backend=cuda --retune=row_sum,row_max,row_argmax,cross_entropy --co -q -p no:cacheprovider --autotune-dir=$OUT/autotune > $OUT/retune.log 2>&1
echo retune rc $?
export TRITON_CACHE_DIR=/tmp/triton-cache-a
time timeout 160 python -m pytest --backend=cuda -n auto -p no:cacheprovider --autotune-dir=$OUT/autotune --results-dir=$OUT/cold > $OUT/cold.log 2>&1
echo cold rc $?
tail -12 $OUT/cold.log
time timeout 110 python -m pytest --backend=cuda -n auto -p no:cacheprovider --autotune-dir=$OUT/autotune --results-dir=$OUT/warm > $OUT/warm.log 2>&1
echo warm rc $?
tail -6 $OUT/warm.log
export TRITON_CACHE_DIR=/tmp/triton-cache-b
time timeout 150 python -m pytest --backend=cuda -n 16 -p no:cacheprovider --autotune-dir=$OUT/autotune --results-dir=$OUT/cold16 > $OUT/cold16.log 2>&1
echo cold16 rc $?
tail -6 $OUT/cold16.log
