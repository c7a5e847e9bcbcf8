#!/bin/bash
# One call on a lent GPU, from the repository root of the tree whose kernels/fp8.py checks fp8_quant_rowwise's
# dequantized_error property on the device. Editing kernels/fp8.py made fp8_quant_rowwise's and fp8_scaled_matmul's
# tuned configs stale (their source hash), so:
#  1. both retuned into this GPU's cache file (sm_90.json on an H100, sm_90.h200_sxm.json on an H200), kept in $W;
#  2. the property's planted bugs on this GPU (tests/test_fp8_property.py), and the check before against the shipped
#     one on the same cases (ab.py);
#  3. the two kernels' suite (README's profile, 16 workers) with the retuned cache: no stale lookups, all passed.
#   TAG=<label> [GPU=0] bash evidence/gpu-speed/fp8-property-on-device/call.sh
export PYTHONUNBUFFERED=1
tag=${TAG:?TAG}; W=$OUT/$tag; mkdir -p "$W"
export CUDA_VISIBLE_DEVICES=${GPU:-0} TRITON_CACHE_DIR=/tmp/fp8-triton-$tag
rm -rf "$TRITON_CACHE_DIR"
nvidia-smi -i "$CUDA_VISIBLE_DEVICES" --query-gpu=name,driver_version --format=csv,noheader | tee "$W/gpu.txt"
(cd hardware_profiles/autotune && sha256sum *.json) > "$W/before.sha256"
TIMEFORMAT='%R'
t=$( { time timeout 300 python -m pytest --backend=cuda --retune=fp8_quant_rowwise,fp8_scaled_matmul --co -q \
        -p no:cacheprovider > "$W/retune.log" 2>&1; } 2>&1 )
echo "retune: exit $?, ${t} s; $(grep -c chose "$W/retune.log") entries"
(cd hardware_profiles/autotune && sha256sum -c "$W/before.sha256" 2>&1 | grep -v ': OK$')
cp hardware_profiles/autotune/*.json "$W/"
timeout 120 python -m pytest tests/test_fp8_property.py -q -p no:cacheprovider > "$W/planted.log" 2>&1
echo "planted: exit $? | $(tail -1 "$W/planted.log")"
timeout 240 python evidence/gpu-speed/fp8-property-on-device/ab.py "$W/ab.json" > "$W/ab.log" 2>&1
echo "ab: exit $?"; cat "$W/ab.log"
timeout 200 python -m pytest --backend=cuda --kernels=fp8_quant_rowwise,fp8_scaled_matmul -n 16 -p no:cacheprovider \
  --results-dir="$W/suite" > "$W/suite.log" 2>&1
echo "suite: exit $? | $(grep -iE 'stale|lookups' "$W/suite.log" | head -3 | tr '\n' ' ') | $(tail -1 "$W/suite.log")"
gzip -n "$W"/suite/run-*.json 2>/dev/null
# The device tool returns at most 8 files a folder: the run file, the checksums and ab.json go in one archive.
(cd "$W" && tar czf rest.tgz suite before.sha256 ab.json && rm -rf suite before.sha256 ab.json)
true
