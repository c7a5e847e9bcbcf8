"""The suite under a name of its own (triton_portability/): its public spec API is what the guide and the examples
import from kernels.*, and its commands work from a checkout as from an installed copy (tests/project/test_installed.py has
the installed copy, beside another distribution that owns a top-level `kernels`)."""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SPEC_API = {"kernels.spec", "kernels.registry", "kernels"}


def _spec_api_imports(source: str) -> set[str]:
    """Every name a module's source imports from the public spec API (kernels.spec, kernels.registry, kernels)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in SPEC_API:
            names |= {alias.name for alias in node.names}
    return names


def _guide_code() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "adding-a-kernel.md").read_text(), re.S)
    return "\n".join(b for b in blocks if "from kernels" in b)


def test_the_public_spec_api_is_what_kernel_modules_import_from_kernels():
    import kernels.inputs
    import kernels.paths
    import kernels.registry
    import kernels.spec
    import triton_portability

    used = _spec_api_imports(_guide_code())
    for example in (ROOT / "examples").glob("*.py"):
        used |= _spec_api_imports(example.read_text())
    assert used >= {"KernelSpec", "register", "inputs", "paths"}, used
    missing = used - set(triton_portability.__all__)
    assert not missing, f"triton_portability does not export {sorted(missing)}, which the guide or an example imports"
    # everything kernels.spec offers kernel modules (its own names and those it re-exports), as the same objects
    offered = {n for n, v in vars(kernels.spec).items() if not n.startswith("_") and not inspect.ismodule(v)
               and (n.isupper() or (getattr(v, "__module__", None) or "").startswith("kernels"))}
    assert offered | {"register", "inputs", "paths", "HOME"} == set(triton_portability.__all__)
    for name in triton_portability.__all__:
        expected = {"register": kernels.registry.register, "inputs": kernels.inputs, "paths": kernels.paths,
                    "HOME": ROOT}.get(name) or getattr(kernels.spec, name)
        assert getattr(triton_portability, name) == expected if name == "HOME" else \
            getattr(triton_portability, name) is expected, name
    with pytest.raises(AttributeError, match="has no attribute 'Kernelspec'"):
        triton_portability.Kernelspec  # noqa: B018


def _python(args: list[str], cwd, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "SUITE_LAUNCHER")}
    # the environment active (its interpreter first on PATH): the commands the suite prints name it `python`
    environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), environ.get("PATH", "")])
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**environ, "COLUMNS": "100", **env})


def test_from_a_checkout_the_commands_are_the_installed_copys(tmp_path):
    """``python -m triton_portability`` and ``python -m triton_portability.reports`` from a checkout, run with the
    repository on PYTHONPATH from another directory, name themselves so in their usage."""
    suite = _python(["-m", "triton_portability", "--help"], tmp_path, PYTHONPATH=str(ROOT))
    assert suite.returncode == 0 and suite.stdout.startswith("usage: python -m triton_portability "), suite
    assert suite.stdout.rstrip().endswith("python -m triton_portability --help-pytest"), suite.stdout[-300:]
    reports = _python(["-m", "triton_portability.reports", "build", "--out"], tmp_path, PYTHONPATH=str(ROOT))
    assert reports.returncode == 2, reports
    assert reports.stderr.splitlines()[-1].startswith("python -m triton_portability.reports build: error: "), reports
    old = _python(["-m", "suite", "--help"], ROOT)  # the checkout's own command stays
    assert old.returncode == 0 and old.stdout.startswith("usage: python -m suite "), old


def test_a_kernel_module_importing_triton_portability_runs_and_fails_as_printed(tmp_path):
    """A module of one's own that imports the spec API from triton_portability runs under the suite started from a
    checkout through ``python -m triton_portability``; a planted bug's reproduction line starts that way."""
    source = (ROOT / "examples" / "leaky_relu.py").read_text()
    source = source.replace("from kernels import inputs, paths\nfrom kernels.registry import register\n"
                            "from kernels.spec import", "from triton_portability import inputs, paths, register,")
    assert "from kernels" not in source and "from triton_portability import" in source
    (tmp_path / "leaky_bug.py").write_text(source.replace("y = tl.where(x >= 0, x, x * slope)",
                                                          "y = tl.where(x > 0.5, x, x * slope)"))
    run = _python(["-m", "triton_portability", "--kernel-module=leaky_bug.py", "--kernels=leaky_relu", "-k",
                   "test_matches_reference and fp32", "--no-results", "-p", "no:cacheprovider"], tmp_path,
                  PYTHONPATH=str(ROOT))
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-3000:]
    line = next(ln.split("reproduce with: ", 1)[1] for ln in out.splitlines() if "reproduce with: " in ln)
    assert line.startswith("python -m triton_portability 'suite/test_kernels.py::test_matches_reference[leaky_relu-"
                           "fp32]' "), line
    assert "1 failed" in out, out[-3000:]


def test_a_suite_package_imported_from_elsewhere_first_is_refused_naming_both(tmp_path):
    """Another distribution's `kernels`, imported before triton_portability: one ImportError line naming both."""
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "__init__.py").write_text("")
    proc = _python(["-c", "import kernels, triton_portability"], tmp_path, PYTHONPATH=str(ROOT))
    assert proc.returncode == 1, proc
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: 'kernels' is already imported from {tmp_path / 'kernels' / '__init__.py'}, "
                           f"not the suite's {ROOT / 'kernels'} (import triton_portability before"), last
    # imported first, triton_portability gives this process the suite's own, whatever else is importable
    ours = _python(["-c", "import triton_portability, kernels; print(kernels.__file__)"], tmp_path,
                   PYTHONPATH=str(ROOT))
    assert ours.returncode == 0 and ours.stdout.strip() == str(ROOT / "kernels" / "__init__.py"), ours


def test_triton_portability_is_never_recorded_as_a_kernel_modules_library():
    """A kernel module that imports the spec API from triton_portability brought in the suite, not a library."""
    import triton_portability.reports  # noqa: F401 - in sys.modules, as after such a module's import
    from suite.session import provenance

    assert provenance.libraries({"triton_portability", "triton_portability.reports"}) == []


def test_another_kernels_inside_the_checkout_is_still_another(monkeypatch):
    """A checkout's HOME is the repository root: another distribution's kernels installed in a virtualenv inside it
    (./.venv/lib/.../site-packages/kernels) lies under HOME, and was taken for the suite's."""
    import types

    import triton_portability

    foreign = types.ModuleType("kernels")
    foreign.__file__ = str(triton_portability.HOME / ".venv" / "lib" / "site-packages" / "kernels" / "__init__.py")
    monkeypatch.setitem(sys.modules, "kernels", foreign)
    [problem] = triton_portability.foreign_imports()
    assert "'kernels' is already imported from" in problem and ".venv" in problem
