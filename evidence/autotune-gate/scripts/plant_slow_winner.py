"""Copy the shipped autotune caches into DIR and, in ARCH_FILE's copy, replace one entry's winner with the slowest
config its own tuning run timed (a stale winner, as a toolchain change can leave one).

    python plant_slow_winner.py DIR ARCH_FILE KERNEL DTYPE SHAPE_KEY
e.g. python plant_slow_winner.py /tmp/planted sm_90.json gelu bf16 M=16384,N=16384
"""

import json
import shutil
import sys
from pathlib import Path

out, arch_file, kernel, dtype, shape = sys.argv[1:6]
shipped = Path(__file__).resolve().parents[3] / "hardware_profiles" / "autotune"
Path(out).mkdir(parents=True, exist_ok=True)
for f in shipped.glob("*.json"):
    shutil.copy(f, Path(out) / f.name)
path = Path(out) / arch_file
data = json.loads(path.read_text())
key = f"{kernel}/{dtype}/{shape}"
entry = data["entries"][key]
ok = [t for t in entry["tried"] if t["status"] == "ok"]
slow = max(ok, key=lambda t: t["median_ms"])
best = min(ok, key=lambda t: t["median_ms"])
print(f"planted {key} in {path}: winner {entry['config']} ({best['median_ms']} ms when tuned) -> "
      f"{slow['config']} ({slow['median_ms']} ms when tuned, {slow['median_ms'] / best['median_ms']:.3f}x)")
entry["config"] = slow["config"]
path.write_text(json.dumps(data, indent=1))
