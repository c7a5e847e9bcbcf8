#!/bin/bash
# The autotune gate on a GPU: the shipped cache with one planted slow winner (vector_add fp32's winner replaced by
# its slowest timed config), checked with --retune-check; then README's GPU command on the same machine.
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name --format=csv,noheader
planted=$(mktemp -d)
cp hardware_profiles/autotune/*.json "$planted/"
python - "$planted" <<'PY'
import json, sys
from pathlib import Path
for path in Path(sys.argv[1]).glob("*.json"):
    data = json.loads(path.read_text())
    for key, e in data["entries"].items():
        if e["kernel"] == "vector_add" and e["dtype"] == "fp32":
            slow = max((t for t in e["tried"] if t["status"] == "ok"), key=lambda t: t["median_ms"])
            print(f"{path.name} {key}: winner {e['config']} -> planted {slow['config']}")
            e["config"] = slow["config"]
    path.write_text(json.dumps(data, indent=1))
PY
echo "== --retune-check=vector_add against the planted cache"
timeout 150 python -m pytest --backend=cuda suite/test_kernels.py -k "vector_add-fp32" --retune-check=vector_add \
  --autotune-dir="$planted" -p no:cacheprovider --results-dir=$OUT/gate > $OUT/gate.log 2>&1
echo "rc=$?"; grep -E "autotune check|^  vector_add|passed|failed" $OUT/gate.log | head -20
echo "== README's GPU command"
timeout 150 python -m pytest --backend=cuda -n auto -p no:cacheprovider --results-dir=$OUT/main > $OUT/main.log 2>&1
echo "rc=$?"; tail -4 $OUT/main.log
gzip -n $OUT/main/*.json 2>/dev/null
exit 0
