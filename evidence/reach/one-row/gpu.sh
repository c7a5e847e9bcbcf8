#!/usr/bin/env bash
# cross_entropy's one-row case on a GPU, with the draw as it was (its only row ignored) and as fixed, then README's
# GPU command cold and warm on this tree (the autotune entries moved to the narrower source hash must still be hits).
# Run from the repository root on a CUDA machine: OUT=/some/dir bash evidence/reach/one-row/gpu.sh
set -u
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1; echo "cores: $(nproc)"
  python -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)"; } \
  > "$OUT/machine.txt" 2>&1
python -c "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"
CASE='M=1,V=2999;layout=padded_rows;values=subnormal;seed=17910'
TEST='suite/test_kernels.py::test_matches_reference[cross_entropy-fp32]'
old=$(mktemp -d); cp -r . "$old"/; rm -rf "$old/runs"
python3 - "$old/kernels/cross_entropy.py" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
s2 = s.replace("    ignored[0] = False  # a case of one row has a row the kernel computes\n", "")
assert s2 != s
open(p, "w").write(s2)
PY
(cd "$old" && python -m pytest -p no:cacheprovider "$TEST" --backend=cuda "--repro=$CASE" --results-dir="$OUT/repro-old-runs") \
  > "$OUT/repro-old.log" 2>&1
echo "repro, the draw as it was: exit $?" | tee "$OUT/summary.txt"
python -m pytest -p no:cacheprovider "$TEST" --backend=cuda "--repro=$CASE" --results-dir="$OUT/repro-new-runs" \
  > "$OUT/repro-new.log" 2>&1
echo "repro, the draw fixed: exit $?" | tee -a "$OUT/summary.txt"
grep -h -E "^VERDICT|BROKEN SPEC" "$OUT"/repro-*.log | tee -a "$OUT/summary.txt"
find . -name __pycache__ -prune -exec rm -rf {} +
for mode in cold warm; do
  [ "$mode" = cold ] && rm -rf /tmp/tc-one-row /tmp/pyc-one-row
  t0=$EPOCHREALTIME
  TRITON_CACHE_DIR=/tmp/tc-one-row SUITE_BYTECODE_DIR=/tmp/pyc-one-row python -m pytest --backend=cuda -n auto \
    --results-dir="$OUT/$mode-runs" > "$OUT/$mode.log" 2>&1
  rc=$?; t1=$EPOCHREALTIME
  printf 'README GPU command, %s: exit %s, shell %s s; %s\n' "$mode" "$rc" "$(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")" \
    "$(tail -n 1 "$OUT/$mode.log" | tr -d '=')" | tee -a "$OUT/summary.txt"
  grep -i -E "stale|retune" "$OUT/$mode.log" | head -5 | tee -a "$OUT/summary.txt"
done
python3 - "$OUT" <<'PY' | tee -a "$OUT/summary.txt"
import glob, gzip, json, sys
for mode in ("cold", "warm"):
    for path in glob.glob(f"{sys.argv[1]}/{mode}-runs/run-*.json*"):
        data = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
        found = []
        def walk(x, where=""):
            if isinstance(x, dict):
                for k, v in x.items():
                    if k in ("lookups", "stale_kernels"):
                        found.append((where + "/" + k, v))
                    else:
                        walk(v, where + "/" + k)
            elif isinstance(x, list):
                for v in x[:0]:
                    walk(v, where)
        walk(data)
        print(mode, "autotune:", json.dumps(found)[:600])
PY
