#!/bin/bash
# One call on a lent GPU, from the repository root of the tree whose kernels/softmax_online.py computes softmax's
# properties on the device; abtrees/old_softmax_online.py is the file before (the host's float64 copies).
#  1. softmax_online retuned into a copy of the shipped caches ($W/autotune), its module having changed;
#  2. softmax's and softmax_online's fp32 properties in the nightly profile, one seed, 2 workers: new (cold Triton
#     cache), old (the file swapped back, the shipped caches), new again, back to back on this machine;
#  3. softmax and softmax_online's suite (README's profile, 16 workers) with the retuned copy.
export PYTHONUNBUFFERED=1
tag=${TAG:?TAG}; W=$OUT/$tag; mkdir -p "$W/autotune"; cp hardware_profiles/autotune/*.json "$W/autotune/"
export TRITON_CACHE_DIR=/tmp/props-triton; rm -rf "$TRITON_CACHE_DIR"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$W/gpu.txt"; nproc >> "$W/gpu.txt"
(cd "$W/autotune" && sha256sum *.json) > "$W/before.sha256"
TIMEFORMAT='%R'
t=$( { time timeout 200 python -m pytest --backend=cuda --retune=softmax_online --co -q -p no:cacheprovider --autotune-dir="$W/autotune" > "$W/retune.log" 2>&1; } 2>&1 )
echo "retune rc $? ${t} s; $(grep -c chose "$W/retune.log") entries"; (cd "$W/autotune" && sha256sum -c ../before.sha256 2>&1 | grep -v OK)
props() {  # NAME AUTOTUNE_DIR LIMIT
  local t0=$EPOCHREALTIME
  timeout "$3" python -m pytest suite/test_properties.py --backend=cuda --hypothesis-profile=nightly --hypothesis-seed=7 \
    --kernels=softmax,softmax_online -k fp32 -n 2 -p no:cacheprovider --autotune-dir="$2" --results-dir="$W/$1" > "$W/$1.log" 2>&1
  local rc=$?; echo "$1: exit $rc, $(awk "BEGIN{print $EPOCHREALTIME - $t0}") s in the shell | $(tail -1 "$W/$1.log")"
}
props new-1 "$W/autotune" 200
cp kernels/softmax_online.py /tmp/new_softmax_online.py && cp abtrees/old_softmax_online.py kernels/softmax_online.py
props old hardware_profiles/autotune 330
cp /tmp/new_softmax_online.py kernels/softmax_online.py
props new-2 "$W/autotune" 200
timeout 200 python -m pytest --backend=cuda --kernels=softmax,softmax_online -n 16 -p no:cacheprovider --autotune-dir="$W/autotune" --results-dir="$W/suite" > "$W/suite.log" 2>&1
echo "suite: exit $? | $(grep -E 'lookups' "$W/suite.log" | head -2 | tr '\n' ' ') | $(tail -1 "$W/suite.log")"
python3 - "$W" <<'PY'
import glob, gzip, json, sys
for name in ("new-1", "old", "new-2"):
    for f in sorted(glob.glob(f"{sys.argv[1]}/{name}/run-*.json")):
        d = json.load(open(f))
        for t in d["tests"]:
            tm = t.get("timing") or {}
            print(name, t["nodeid"].split("[")[1][:-1], t["outcome"], f'{t["duration_s"]:.1f} s', "property",
                  tm.get("property_s"), "compile", tm.get("compile_s"), "gate", tm.get("gpu_wait_s"))
PY
gzip -n "$W"/*/run-*.json 2>/dev/null
cd "$OUT" && tar czf "$tag.tgz" "$tag" && rm -rf "$tag" && ls -la "$OUT"
