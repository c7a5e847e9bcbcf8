#!/usr/bin/env bash
# Plants three stride bugs, one at a time, in a copy of this tree and runs README's GPU command on each (limited to
# the kernel planted), printing per plant whether the run failed (it must). Run from the repository root on a CUDA
# machine with the runner's torch and triton: OUT=/some/dir bash evidence/reach/plant.sh. Logs go to $OUT.
# PLANT_TIMEOUT: seconds each plant's run may take (170 unless set).
#   tma_a_stride:    matmul's descriptor (TMA) path takes A's width for its row stride (kernels/_tiles.py)
#   fp8_out_stride:  fp8_quant_rowwise's output row stride taken as its width (kernels/fp8.py)
#   tma_c_stride:    the descriptor path's output row stride taken as its width, reached on a GPU only through
#                    fp8_scaled_matmul (fp8 is not drawn on the interpreter) (kernels/_tiles.py)
set -u
OUT=${OUT:-/tmp/reach-plant}
mkdir -p "$OUT"
ROOT=$(pwd)
plant() {  # name kernel file python-replacement
  local name=$1 kernel=$2 file=$3 old=$4 new=$5 dir
  dir=$(mktemp -d)
  cp -r "$ROOT"/. "$dir"/
  rm -rf "$dir/runs"
  python3 - "$dir/$file" "$old" "$new" <<'PY' || { echo "$name: PLANT FAILED (text not found)"; return; }
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
assert text.count(old) == 1, f"{old!r} found {text.count(old)} times in {path}"
open(path, "w").write(text.replace(old, new))
PY
  (cd "$dir" && timeout "${PLANT_TIMEOUT:-170}" python -m pytest --backend=cuda -n auto --kernels="$kernel" -p no:cacheprovider \
      --results-dir="$OUT/$name-runs" > "$OUT/$name.log" 2>&1)
  local rc=$?
  if [ $rc -eq 1 ]; then echo "$name: run FAILED (exit 1): caught"; else echo "$name: exit $rc: NOT caught"; fi
  grep -m1 -E "^VERDICT" "$OUT/$name.log"
  rm -rf "$dir"
}
plant tma_a_stride matmul kernels/_tiles.py "m, n, k, a.stride(0)," "m, n, k, k,"
plant fp8_out_stride fp8_quant_rowwise kernels/fp8.py 'out["q"].stride(0),' 'k,'
plant tma_c_stride fp8_scaled_matmul kernels/_tiles.py "b.stride(1) if b_k_major else b.stride(0), c.stride(0)," \
      "b.stride(1) if b_k_major else b.stride(0), n,"
