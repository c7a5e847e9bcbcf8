#!/bin/bash
# GPU call 3 (two GPUs of one host): the nightly profile's throughput on one GPU and on two, same window, cold caches.
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
W=${W:-210}
nvidia-smi --query-gpu=index,name,memory.total --format=csv
nproc
nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader -l 10 > $OUT/smi.csv 2>&1 &
echo "== one GPU (CUDA_VISIBLE_DEVICES=0, 16 cores), nightly, ${W} s"
mkdir -p /tmp/tc1 /tmp/tc2
CUDA_VISIBLE_DEVICES=0 TRITON_CACHE_DIR=/tmp/tc1 timeout -s INT $W taskset -c 0-15 python -m pytest --backend=cuda -n auto \
  --hypothesis-profile=nightly --results-dir=$OUT/one -p no:cacheprovider > $OUT/one.log 2>&1
echo "rc=$?"; grep -E "GPU sharing|INTERMITTENT|passed|failed|result file" $OUT/one.log | tail -6
echo "== two GPUs, nightly, ${W} s"
TRITON_CACHE_DIR=/tmp/tc2 timeout -s INT $W python -m pytest --backend=cuda -n auto \
  --hypothesis-profile=nightly --results-dir=$OUT/two -p no:cacheprovider > $OUT/two.log 2>&1
echo "rc=$?"; grep -E "GPU sharing|INTERMITTENT|passed|failed|result file" $OUT/two.log | tail -6
python - <<'PY'
import json, glob, os, collections
for name in ("one", "two"):
    f = sorted(glob.glob(os.environ["OUT"] + f"/{name}/*.json"))[-1]
    d = json.load(open(f))
    cases = d["cases"]
    print(name, "status", d.get("status"), "gpu_share", d.get("gpu_share"))
    print("  cases", len(cases), collections.Counter((c["outcome"], c.get("failure")) for c in cases))
    print("  tests", collections.Counter(t["outcome"] for t in d["tests"]))
    print("  timing", {k: v for k, v in (d.get("timing") or {}).items() if not isinstance(v, (dict, list))})
    for t in d["tests"]:
        if t["outcome"] not in ("passed", "skipped", "xfailed"):
            print("   ", t["nodeid"], (t.get("message") or "")[:400].replace("\n", " | "))
PY
for f in $OUT/one/*.json $OUT/two/*.json; do gzip $f; done
