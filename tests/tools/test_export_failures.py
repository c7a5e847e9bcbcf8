"""--export-failures: a failing case travels as a folder whose repro.py reruns it with torch and triton alone (the
suite not importable), exits 1 printing the suite's comparison while the kernel is wrong, and 0 once it is fixed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forkserver

FIXTURE = Path(__file__).parent.parent / "fixtures" / "export_planted.py"
STORE = "tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)"
PLANTS = {
    # the kernel's slope for negative inputs is twice the reference's
    "value": lambda text: text,
    # the store drops its mask: the last program writes past the output's end
    "store": lambda text: text.replace("x * PLANTED_SLOPE", "x * slope").replace(
        STORE, "tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty))"),
}


def fixed(text: str) -> str:
    return text.replace("x * PLANTED_SLOPE", "x * slope")


def rerun(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """repro.py as someone without the suite runs it: from its folder, no PYTHONPATH, the suite's root not on the path;
    on the interpreter, as the case was exported, also on a GPU machine (tests/tools/test_export_repro.py runs one there)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRITON_INTERPRET")}
    return forkserver.run_python_script("repro.py", ["--interpret", *args], folder, env, timeout=300)


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_an_exported_case_fails_without_the_suite_until_fixed(run_suite, tmp_path, plant):
    module = tmp_path / "export_planted.py"
    module.write_text(PLANTS[plant](FIXTURE.read_text()))
    out = tmp_path / "exported"
    res = run_suite("suite/test_kernels.py", f"--kernel-module={module}", "--kernels=export_leaky", "-n", "0",
                    f"--export-failures={out}")
    assert res.returncode == 1, res.output[-3000:]
    folders = sorted(p for p in out.iterdir() if p.is_dir())
    assert [f.name for f in folders] == ["export_leaky-fp32-seed0"], folders  # Hypothesis's minimal case: N=1
    folder = folders[0]
    assert "exported to" in res.output and str(folder / "repro.py") in res.output, res.output[-3000:]
    meta = json.loads((folder / "meta.json").read_text())
    # The suite is not importable where repro.py runs: only torch, triton and the folder's own copies.
    probe = subprocess.run([sys.executable, "-c", "import suite"], cwd=folder, capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert probe.returncode == 1 and "No module named 'suite'" in probe.stderr
    wrong = rerun(folder)
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert "STILL WRONG" in wrong.stdout and meta["case"] in wrong.stdout
    if plant == "value":  # the suite's own comparison, element, error and bound, as the suite printed it
        assert meta["message"].split(" is ")[0] in wrong.stdout, (meta["message"], wrong.stdout)
        assert "x the bound" in wrong.stdout
    else:  # the suite's interpreter memory check, run by repro.py, stops the store before it lands
        assert "out-of-bounds store in kernel leaky_relu_kernel" in wrong.stdout, wrong.stdout
    (tmp_path / "fixed.py").write_text(fixed(FIXTURE.read_text()))
    right = rerun(folder, f"--module={tmp_path / 'fixed.py'}")
    assert right.returncode == 0 and "RIGHT:" in right.stdout, right.stdout + right.stderr
    if plant != "value":
        return
    # Fixed in place (the copy it carries), as someone with the folder alone would.
    copy = folder / meta["module"]["copy"]
    copy.write_text(fixed(FIXTURE.read_text()))
    assert rerun(folder).returncode == 0
