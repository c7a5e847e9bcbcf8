"""README's driver-validation guide, run as written (on the interpreter, one kernel): two runs with the
validation profile draw the same cases, and `reports compare` finds nothing between them."""

from __future__ import annotations

import glob
import re
import shlex
import subprocess
import sys

from tests.conftest import ROOT


def guide_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Driver validation", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)[1]
    return [shlex.split(line) for line in block.splitlines() if line and not line.startswith("#")]


def test_the_guide_commands_run_and_compare_clean(tmp_path):
    commands = guide_commands()
    assert [c[0] for c in commands] == ["pytest", "pytest", "python"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for argv in commands[:2]:
        assert "--hypothesis-profile=validation" in argv
        argv = [a.replace("validation/", f"{tmp_path}/") for a in argv if a != "--backend=cuda"]
        argv = [sys.executable, "-m", *argv, "--backend=interpret", "--kernels=vector_add", "-k", "fp32",
                "-p", "no:cacheprovider"]
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    compare = [a.replace("validation/", f"{tmp_path}/") for a in commands[2]]
    files = [glob.glob(a) if "*" in a else [a] for a in compare[3:]]
    argv = [sys.executable, *compare[1:3], *[f for group in files for f in group]]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "No regressions" in proc.stdout
    assert (tmp_path / "compare.md").exists()
