#!/bin/bash
# A/B on one GPU (from the repository root): the nightly profile on memory-heavy kernels and matmul (compile-heavy),
# 16 workers, each run stopped with SIGINT after LIMIT seconds from its own cold Triton cache: first with a case
# giving its GPU's shared lock back while Triton compiles (this tree), then with the previous gpu_share.py and
# timing.py (.ab/, commit 2c6b84c: the case held the lock through its compiles). Both time the gate (gpu_wait_s).
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../../.."
limit=${LIMIT:-180}; K=cross_entropy,row_argmax,row_sum,swiglu,gelu,layernorm,dropout,softmax,matmul
nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tee $OUT/machine.txt
for v in release hold; do
  if [ $v = hold ]; then cp .ab/gpu_share.py suite/workers/gpu_share.py; cp .ab/timing.py suite/workers/timing.py; fi
  mkdir -p $OUT/$v
  TRITON_CACHE_DIR=$(mktemp -d) timeout -s INT $limit python -m pytest --backend=cuda -n auto --hypothesis-profile=nightly \
    --kernels=$K --results-dir=$OUT/$v -p no:cacheprovider > $OUT/$v/log.txt 2>&1
  echo "$v: exit $?"; grep -E "GPU sharing|^time in tests|waiting at" -A2 $OUT/$v/log.txt | head -8
  python - $OUT/$v <<'PY'
import glob, json, sys, collections
d = json.load(open(sorted(glob.glob(sys.argv[1] + "/run-*.json"))[-1]))
t = d["timing"]
print(json.dumps({"tests": dict(collections.Counter(x["outcome"] for x in d["tests"])),
                  "cases": dict(collections.Counter(c["outcome"] for c in d["cases"])),
                  "gpu_share": {k: v for k, v in d["gpu_share"].items() if k != "too_large_cases"},
                  "timing": {k: v for k, v in t.items() if not isinstance(v, (dict, list))}}))
PY
  gzip -n $OUT/$v/run-*.json
done
