#!/usr/bin/env bash
# GPU checks of the layered suite/ (state in the Session): the parts that run on a GPU only, one log each under
# $OUT/logs, a line each in $OUT/checks.txt.
set -u
export PYTHONUNBUFFERED=1
R=$PWD
mkdir -p "$OUT/logs"
c() {  # name, command...
  local name=$1; shift
  local s; s=$(date +%s)
  timeout 150 bash -c "$*" > "$OUT/logs/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc $(( $(date +%s) - s )) s | $(tail -1 "$OUT/logs/$name.log")" | tee -a "$OUT/checks.txt"
}
{ nvidia-smi -L; python -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)"; } 2>&1 | tee -a "$OUT/checks.txt"
# The harness's tests that exercise the moved state on a GPU: GPU sharing, warm-up, watchdog, input writes, fp8 rows.
c harness-gpu "python -m pytest tests/test_gpu_share.py tests/test_warmup.py tests/test_watchdog.py tests/test_input_writes.py tests/test_fp8_layouts.py tests/test_layout.py tests/test_bench.py -n 4 -q -p no:cacheprovider"
# Crash isolation with 16 workers (the crash journal, the watchdog and the GPU share are the Session's now).
c crash-16 "python -m pytest suite/test_kernels.py suite/test_properties.py --backend=cuda -n 16 --kernel-module=tests/fixtures/faulting_kernels.py --kernels=zz_fault,zz_oom,zz_hang,vector_add,softmax,layernorm --case-timeout=20 --results-dir=$OUT/runs-crash -p no:cacheprovider"
# Benchmarks (the timer and the spin rate are the Session's now), two kernels.
c perf "python -m pytest -m perf --backend=cuda --kernels=vector_add,softmax -n 2 --results-dir=$OUT/runs-perf -p no:cacheprovider"
# The suite installed (its subpackages listed in pyproject.toml) and run from another directory.
mkdir -p /tmp/their && cp examples/leaky_relu.py /tmp/their/
if python -m pip install -q --no-deps --no-build-isolation --target /tmp/site "$R" > "$OUT/logs/install.log" 2>&1; then
  c installed "cd /tmp/their && PYTHONPATH=/tmp/site python -m suite --backend=cuda --kernel-module=leaky_relu.py --kernels=leaky_relu -n 4 && PYTHONPATH=/tmp/site python -c 'import suite.session.stash as s; print(s.__file__)'"
else
  echo "install failed: $(tail -3 "$OUT/logs/install.log")" | tee -a "$OUT/checks.txt"
fi
python - "$OUT" <<'PY' | tee -a "$OUT/checks.txt"
import json, glob, sys
for f in sorted(glob.glob(sys.argv[1] + "/runs-*/run-*.json")):
    d = json.load(open(f))
    print(f.split("/")[-2], d["status"], "tests", len(d["tests"]), "outcomes",
          {o: sum(t["outcome"] == o for t in d["tests"]) for o in sorted({t["outcome"] for t in d["tests"]})},
          "incidents", [(i.get("kind"), i.get("case", "")[:40]) for i in d.get("incidents", [])][:6])
PY
tar czf "$OUT/checks.tgz" -C "$OUT" logs $(cd "$OUT" && ls -d runs-* 2>/dev/null)
