#!/usr/bin/env bash
# GPU checks of this change, one log each under $OUT/logs, a line each in $OUT/checks.txt.
set -u
export PYTHONUNBUFFERED=1
R=$PWD
mkdir -p "$OUT/logs"
c() {  # name, command...
  local name=$1; shift
  local s; s=$(date +%s)
  timeout 200 bash -c "$*" > "$OUT/logs/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc $(( $(date +%s) - s )) s | $(tail -1 "$OUT/logs/$name.log")" | tee -a "$OUT/checks.txt"
}
python -c "import numpy, triton; print('numpy', numpy.__version__, 'triton', triton.__version__)" | tee -a "$OUT/checks.txt"
# Input writes, empty cases and padded fp8 rows through the suite on cuda (the test skips without CUDA).
c planted-gpu "python -m pytest tests/test_input_writes.py tests/test_fp8_layouts.py tests/test_compat.py tests/test_watchdog.py -n 4 -q -p no:cacheprovider"
# Triton 3.6.0's interpreter with this image's numpy (>= 2.4): attention's and matmul's loop bounds (hazard 22).
c interpret-numpy "python -m pytest --backend=interpret --kernels=attention,matmul -n 8 --results-dir=$OUT/runs-interp -p no:cacheprovider"
# A worker that cannot parse its arguments stops the run at once (it used to be replaced for minutes).
c startup-stop "python -m pytest --backend=cuda -n 16 --results-dir $OUT/sp-dir -p no:cacheprovider"
# Crash isolation with 16 workers: faults, OOM and hangs beside clean kernels; re-queued tests must run.
c crash-16 "python -m pytest suite/test_kernels.py suite/test_properties.py --backend=cuda -n 16 --kernel-module=tests/fixtures/faulting_kernels.py --kernels=zz_fault,zz_oom,zz_hang,vector_add,softmax,layernorm --case-timeout=20 --results-dir=$OUT/runs-crash -p no:cacheprovider"
# The suite installed (no network: setuptools from the image, else PYTHONPATH) and run from another directory.
mkdir -p /tmp/their && cp examples/leaky_relu.py /tmp/their/
if python -m pip install -q --no-deps --no-build-isolation --target /tmp/site "$R" > "$OUT/logs/install.log" 2>&1; then
  c installed "cd /tmp/their && PYTHONPATH=/tmp/site python -m suite --backend=cuda --kernel-module=leaky_relu.py --kernels=leaky_relu -n 4 && PYTHONPATH=/tmp/site python -c 'import suite; print(suite.__file__)'"
else
  c installed-pythonpath "cd /tmp/their && PYTHONPATH=$R python -m suite --backend=cuda --kernel-module=leaky_relu.py --kernels=leaky_relu -n 4"
fi
python - "$OUT" <<'PY' | tee -a "$OUT/checks.txt"
import json, glob, sys
for f in sorted(glob.glob(sys.argv[1] + "/runs-*/run-*.json")):
    d = json.load(open(f)); e = d["environment"]
    print(f.split("/")[-2], d["status"], {k: e.get(k) for k in ("triton", "torch", "numpy", "runtime", "driver")},
          "tests", len(d["tests"]), "outcomes", sorted({t["outcome"] for t in d["tests"]}))
PY
tar czf "$OUT/checks.tgz" -C "$OUT" logs $(cd "$OUT" && ls -d runs-* 2>/dev/null)
