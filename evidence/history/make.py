"""Make the nightly history's worked example: six "nights" of the suite on the CPU interpreter, their run files
gzipped into nights/, and the history built from them (history.md, history.json). Run from the repository root:

    python evidence/history/make.py

Each night is a real run of the same small kernel set (vector_add, the fixture zz_nightly_add, the fixture
zz_intermittent) through suite/test_kernels.py and suite/test_properties.py. What changes from night to night:

- night 2 and night 6: zz_intermittent left wrong on every 4th launch (ZZ_WRONG_EVERY unset): an intermittent failure;
  the other nights run it right (ZZ_WRONG_EVERY=0);
- nights 4, 5 and 6: the planted regression, zz_nightly_add wrong (ZZ_NIGHTLY_BROKEN=1, tests/fixtures/
  nightly_regression.py);
- night 5 ran as two shards (--shard=1/2 and 2/2, one --run-id): the history merges them into one night;
- nights 4, 5 and 6: the run files' toolchain fingerprint EDITED after the run, environment.triton "3.6.0" -> "3.7.0",
  to plant a toolchain change on the regression's first night (the runs themselves all ran Triton 3.6.0).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PLANTED_TRITON = "3.7.0"
ARGS = ["suite/test_kernels.py", "suite/test_properties.py", "--backend=interpret", "-n", "0", "-p", "no:randomly",
        "-p", "no:cacheprovider", "--kernel-module=tests/fixtures/nightly_regression.py",
        "--kernel-module=tests/fixtures/intermittent_kernels.py", "--kernels=vector_add,zz_nightly_add,zz_intermittent"]
# night -> (regression on, intermittent on, shards)
NIGHTS = {1: (False, False, 1), 2: (False, True, 1), 3: (False, False, 1), 4: (True, False, 1), 5: (True, False, 2),
          6: (True, True, 1)}


def run_night(night: int, out: Path) -> list[Path]:
    broken, intermittent, shards = NIGHTS[night]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SUITE_", "ZZ_", "GITHUB_")) and k != "TRITON_INTERPRET"}
    env["SUITE_SHRINK_SECONDS"] = "2"  # a failing case is reported after 2 s of shrinking, not 30
    env["ZZ_NIGHTLY_BROKEN"] = "1" if broken else "0"
    if not intermittent:
        env["ZZ_WRONG_EVERY"] = "0"
    files = []
    for index in range(1, shards + 1):
        where = out / f"night{night}-{index}"
        extra = [f"--shard={index}/{shards}", f"--run-id=worked-night-{night}"] if shards > 1 else []
        proc = subprocess.run([sys.executable, "-m", "pytest", *ARGS, f"--results-dir={where}", *extra], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=900)
        print(f"night {night} shard {index}/{shards}: exit {proc.returncode}: {proc.stdout.splitlines()[-1]}")
        files += sorted(where.glob("run-*.json"))
    return files


def main() -> int:
    nights_dir = HERE / "nights"
    shutil.rmtree(nights_dir, ignore_errors=True)
    nights_dir.mkdir()
    with tempfile.TemporaryDirectory() as tmp:
        for night in NIGHTS:
            for path in run_night(night, Path(tmp)):
                data = json.loads(path.read_text())
                if night >= 4:  # the planted toolchain change (see the docstring): an edit, not what ran
                    data["environment"]["triton"] = PLANTED_TRITON
                (nights_dir / f"{path.name}.gz").write_bytes(
                    gzip.compress(json.dumps(data, indent=1).encode(), mtime=0))
        subprocess.run([sys.executable, "-m", "reports", "history", str(nights_dir.relative_to(ROOT)), "--out", tmp],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        for name in ("history.md", "history.json"):
            shutil.copyfile(Path(tmp) / name, HERE / name)
    print(f"wrote {nights_dir.relative_to(ROOT)}/ and {HERE.relative_to(ROOT)}/history.md, history.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
