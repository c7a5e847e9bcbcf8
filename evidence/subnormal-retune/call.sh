#!/bin/bash
# One call on a lent GPU (from the repository root): the six specs that now draw subnormal inputs (vector_add, gelu,
# swiglu, softmax, layernorm, cross_entropy) retuned into a copy of the shipped caches ($OUT/<tag>/autotune/: sm_90.json
# on the H100, the arch's representative; sm_90.h200_sxm.json on an H200), then those six kernels' suite run with the
# new copy (expect 0 failed and no stale lookup). With EXPORT=1 first: the --export-failures check of
# evidence/final-check/gpu-check.sh.
export PYTHONUNBUFFERED=1
tag=${TAG:?TAG}; W=$OUT/$tag; mkdir -p "$W/autotune"; cp hardware_profiles/autotune/*.json "$W/autotune/"
six=cross_entropy,gelu,layernorm,softmax,swiglu,vector_add
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$W/gpu.txt"; nproc >> "$W/gpu.txt"
[ -n "$EXPORT" ] && ONLY=export bash evidence/final-check/gpu-check.sh > "$W/export-check.txt" 2>&1
(cd "$W/autotune" && sha256sum *.json) > "$W/before.sha256"
TIMEFORMAT='wall %R s'
{ time timeout 330 python -m pytest --backend=cuda --retune=$six --co -q -p no:cacheprovider --autotune-dir="$W/autotune" > "$W/retune.log" 2>&1; } 2>> "$W/times.txt"
echo "retune rc $? $(tail -1 "$W/times.txt")"; grep -c chose "$W/retune.log"; (cd "$W/autotune" && sha256sum -c ../before.sha256)
{ time timeout 240 python -m pytest --backend=cuda --kernels=$six -n 16 -p no:cacheprovider --autotune-dir="$W/autotune" --results-dir="$W/six" > "$W/six.log" 2>&1; } 2>> "$W/times.txt"
echo "six rc $? $(tail -1 "$W/times.txt")"; grep -E "^(autotune|lookups)|lookups:" "$W/six.log" | head -3; tail -3 "$W/six.log"
gzip -n "$W"/six/run-*.json 2>/dev/null; cat "$W/export-check.txt" 2>/dev/null | grep -E "exit|repro" 
# what comes back from the device is at most 8 files: the whole folder as one
cd "$OUT" && tar czf "$tag.tgz" "$tag" && rm -rf "$tag" && ls -la "$OUT"
