"""What an exported repro.py says about a kernel (--export-failures; docs/checks.md, "A finding that travels"): never
RIGHT while the kernel is wrong, or where it checked less than the suite did; each exit status in its own case.

The planted kernels are tests/fixtures/export_trust.py's (and export_trust_shared.py's, whose ``run`` comes from a
helper beside it); ``fixed`` writes the same module with every plant taken out."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import forkserver
from tests.conftest import SuiteRun, start_suite_run

FIXTURES = Path(__file__).parent.parent / "fixtures"
TRUST, SHARED = FIXTURES / "export_trust.py", FIXTURES / "export_trust_shared.py"
EXPORTED = ("export_trust_int", "export_trust_bool", "export_trust_writes_input", "export_trust_race",
            "export_trust_oob_read", "export_trust_dot", "export_trust_shared", "export_trust_scalar",
            "export_trust_unseeded", "export_trust_name_*")
# repro.py's exit statuses (docs/checks.md, "A finding that travels")
RIGHT, WRONG, CANNOT_RUN, CANNOT_CONFIRM, OWN_FAILURE = 0, 1, 2, 3, 4


def fixed(text: str) -> str:
    """The fixture's text with every planted bug taken out (each PLANTED_* flag set to 0)."""
    return re.sub(r"^(PLANTED_\w+ = (?:tl\.constexpr\()?)1", r"\g<1>0", text, flags=re.MULTILINE)


def rerun(folder: Path, *args: str, python: tuple[str, ...] = (sys.executable,), env: dict | None = None,
          timeout: int = 300, gpu: bool = False) -> subprocess.CompletedProcess:
    """repro.py as someone without the suite runs it: from its folder, no PYTHONPATH, no TRITON_INTERPRET; on the
    interpreter (as the exports are made) unless ``gpu``, on a GPU machine too."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRITON_INTERPRET")}
    argv = [*args, *(() if gpu else ("--interpret",))]
    if python == (sys.executable,):  # forked from a process that imported torch already, where the environment fits
        return forkserver.run_python_script("repro.py", argv, folder, {**base, **(env or {})}, timeout)
    return subprocess.run([*python, "repro.py", *argv], cwd=folder, env={**base, **(env or {})}, capture_output=True,
                          text=True, timeout=timeout)


def said(res: subprocess.CompletedProcess) -> str:
    return f"exit {res.returncode}\n{res.stdout}\n{res.stderr}"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, SuiteRun]:
    """One suite run over the planted kernels, each failing case exported."""
    base = tmp_path_factory.mktemp("export_repro")
    res = start_suite_run("suite/test_kernels.py", f"--kernel-module={TRUST}", f"--kernel-module={SHARED}",
                          f"--kernels={','.join(EXPORTED)}", "-n", "0", f"--export-failures={base / 'out'}",
                          results_dir=base / "runs")
    assert res.returncode == 1, res.output[-3000:]
    return base / "out", res


@pytest.fixture(scope="module")
def fixed_module(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("fixed") / "export_trust.py"
    path.write_text(fixed(TRUST.read_text()))
    return path


def folder(exported: tuple[Path, SuiteRun], kernel: str) -> Path:
    found = [p for p in exported[0].iterdir() if p.is_dir() and p.name.startswith(f"{kernel}-")]
    assert len(found) == 1, (kernel, sorted(p.name for p in exported[0].iterdir()), exported[1].output[-3000:])
    return found[0]


# --- item 11: every check the suite applied -------------------------------------------------------------------

def test_a_wrong_integer_output_is_wrong_beside_a_right_element(exported, fixed_module):
    """An exact bound of 0: the element that is right gave 0/0, a NaN that hid the wrong one beside it."""
    where = folder(exported, "export_trust_int")
    wrong = rerun(where)
    assert wrong.returncode == WRONG and "STILL WRONG" in wrong.stdout, said(wrong)
    assert "integers differ" in wrong.stdout, said(wrong)
    right = rerun(where, f"--module={fixed_module}")
    assert right.returncode == RIGHT and "RIGHT" in right.stdout, said(right)


def test_an_unwritten_bool_element_is_wrong(exported, fixed_module):
    """The poison byte of a bool output (0x5A) reads as True: an element never written passed where True was due."""
    where = folder(exported, "export_trust_bool")
    wrong = rerun(where)
    assert wrong.returncode == WRONG and "never written" in wrong.stdout, said(wrong)
    assert rerun(where, f"--module={fixed_module}").returncode == RIGHT


def test_a_kernel_that_changes_its_input_is_wrong(exported, fixed_module):
    where = folder(exported, "export_trust_writes_input")
    wrong = rerun(where)
    assert wrong.returncode == WRONG and "changed its input" in wrong.stdout, said(wrong)
    assert rerun(where, f"--module={fixed_module}").returncode == RIGHT


def test_an_unfixed_race_is_never_right(exported, fixed_module):
    """The interpreter runs a block as one: the race's values come out right there. repro.py runs the suite's race
    check on the interpreter (wrong while the race is there, right once the barrier is in); a GPU cannot check it
    and says so (exit 3)."""
    where = folder(exported, "export_trust_race")
    wrong = rerun(where)
    assert wrong.returncode == WRONG and "data race" in wrong.stdout, said(wrong)
    assert rerun(where, f"--module={fixed_module}").returncode == RIGHT


def test_what_it_checked_is_said(exported, fixed_module):
    """A RIGHT names every check it applied, and the suite's that it could not apply here."""
    right = rerun(folder(exported, "export_trust_writes_input"), f"--module={fixed_module}")
    assert right.returncode == RIGHT, said(right)
    for check in ("values", "never-written elements", "guard regions", "inputs unchanged", "a @triton.jit launch",
                  "out-of-bounds accesses", "races"):
        assert check in right.stdout, (check, said(right))


# --- item 16: the module, the script's own failures, memory on the interpreter ------------------------------

def test_the_kernel_module_travels_not_the_helper_that_defines_run(exported, tmp_path):
    """export_trust_shared's run is made by a helper beside it: the folder carries the kernel's module (and the
    helper), so the copy fixed in place passes."""
    where = folder(exported, "export_trust_shared")
    meta = json.loads((where / "meta.json").read_text())
    copy = where / meta["module"]["copy"]
    assert copy.name == SHARED.name and (copy.parent / "export_trust_helpers.py").is_file(), meta["module"]
    wrong = rerun(where)
    assert wrong.returncode == WRONG and "STILL WRONG" in wrong.stdout, said(wrong)
    copy.write_text(fixed(copy.read_text()))
    right = rerun(where)
    assert right.returncode == RIGHT, said(right)


def test_a_fixed_out_of_bounds_read_reads_right_on_the_interpreter(exported, fixed_module):
    """The interpreter's memory check runs in repro.py: the read is found while it is there (1), and the fix reads
    RIGHT (0), where both said 'not confirmed' (3) before."""
    where = folder(exported, "export_trust_oob_read")
    wrong = rerun(where)
    assert wrong.returncode == WRONG and "out-of-bounds load" in wrong.stdout, said(wrong)
    right = rerun(where, f"--module={fixed_module}")
    assert right.returncode == RIGHT, said(right)


def test_the_scripts_own_failures_have_their_own_status(exported, tmp_path):
    """A missing package, a folder missing its files, a module that is not there: exit 4, never 1 (a reproduced
    failure)."""
    where = folder(exported, "export_trust_int")
    bare = rerun(where, python=(sys.executable, "-S", "-I"))  # no site-packages: no torch
    assert bare.returncode == OWN_FAILURE and "torch" in bare.stdout + bare.stderr, said(bare)
    shadow = tmp_path / "shadow"
    (shadow / "numpy").mkdir(parents=True)
    (shadow / "numpy" / "__init__.py").write_text("raise ImportError('numpy is not installed here')\n")
    no_numpy = rerun(where, env={"PYTHONPATH": str(shadow)})
    assert no_numpy.returncode == OWN_FAILURE and "numpy" in no_numpy.stdout + no_numpy.stderr, said(no_numpy)
    (shadow / "packaging").mkdir()
    (shadow / "packaging" / "__init__.py").write_text("raise ImportError('packaging is not installed here')\n")
    shutil.rmtree(shadow / "numpy")
    no_packaging = rerun(where, env={"PYTHONPATH": str(shadow)})  # the interpreter's fixes read Triton's version
    assert no_packaging.returncode == OWN_FAILURE and "packaging" in no_packaging.stdout, said(no_packaging)
    missing = rerun(where, f"--module={tmp_path / 'nowhere.py'}")
    assert missing.returncode == OWN_FAILURE, said(missing)
    broken = tmp_path / "broken"
    shutil.copytree(where, broken)
    (broken / "case.pt").unlink()
    assert rerun(broken).returncode == OWN_FAILURE


def test_the_kernel_runs_on_the_interpreter_as_the_suite_ran_it(exported, fixed_module):
    """The suite fills in the interpreter's gaps (a float argument is an fp32 scalar, as on a GPU; loop bounds from
    arguments under numpy 2.4 and later; libdevice); repro.py ran Triton's interpreter without them, so a kernel
    the suite passed read STILL WRONG there."""
    where = folder(exported, "export_trust_scalar")
    wrong = rerun(where)
    assert wrong.returncode == WRONG and "x the bound" in wrong.stdout, said(wrong)
    right = rerun(where, f"--module={fixed_module}")
    assert right.returncode == RIGHT, said(right)


def test_the_reference_is_the_carried_inputs_own(exported, fixed_module):
    """The export drew the inputs again for the reference: under a make_inputs that ignores the seed, case.pt's
    reference was another draw's, and the fixed kernel read STILL WRONG for ever."""
    where = folder(exported, "export_trust_unseeded")
    assert rerun(where).returncode == WRONG
    right = rerun(where, f"--module={fixed_module}")
    assert right.returncode == RIGHT, said(right)


def test_a_case_this_machine_cannot_run_exits_2(exported, tmp_path):
    """A dtype this machine does not have (fp8 on the interpreter): cannot run here, exit 2, not 'still wrong'."""
    where = tmp_path / "fp8"
    shutil.copytree(folder(exported, "export_trust_int"), where)
    meta = json.loads((where / "meta.json").read_text())
    meta["dtype"] = "fp8e4nv"
    (where / "meta.json").write_text(json.dumps(meta))
    res = rerun(where)
    assert res.returncode == CANNOT_RUN and "cannot run here" in res.stdout.lower(), said(res)


# --- item 19: folders never collide ------------------------------------------------------------------------

def test_long_names_alike_get_folders_of_their_own(exported):
    """Two kernels whose test ids agree in their first 120 characters: two folders, the first not deleted."""
    names = sorted(p.name for p in exported[0].iterdir() if p.name.startswith("export_trust_name_"))
    assert len(names) == 2 and len(set(names)) == 2, (names, exported[1].output[-2000:])
    for name in names:
        assert (exported[0] / name / "repro.py").is_file() and (exported[0] / name / "case.pt").is_file()


@pytest.mark.slow  # a suite run of its own (a crashing or hanging one before)
def test_a_second_export_into_the_same_directory_keeps_the_first(exported, tmp_path):
    """Exported again into the same directory (another run), a case's folder is a new one: the first, perhaps
    with a fix in its kernel/ copy, stays as it was."""
    out = tmp_path / "out"
    first = folder(exported, "export_trust_int")
    shutil.copytree(first, out / first.name)
    marker = out / first.name / "kernel" / "my_fix.txt"
    marker.write_text("kept\n")
    res = start_suite_run("suite/test_kernels.py", f"--kernel-module={TRUST}", "--kernels=export_trust_int", "-n", "0",
                          f"--export-failures={out}", results_dir=tmp_path / "runs")
    assert res.returncode == 1, res.output[-3000:]
    assert marker.read_text() == "kept\n"
    assert len([p for p in out.iterdir() if p.name.startswith("export_trust_int-")]) == 2, sorted(out.iterdir())


# --- item 20: the export's rerun under the suite's memory check and --case-timeout --------------------------

@pytest.mark.slow  # a suite run of its own (a crashing or hanging one before)
def test_a_wild_store_is_exported_without_ending_the_run(tmp_path):
    """With the memory check off, the export's rerun of a store 2**40 elements away ended the process (no run
    file). The check stays on: the run ends as usual, and repro.py finds the store itself."""
    out = tmp_path / "out"
    res = start_suite_run("suite/test_kernels.py", f"--kernel-module={TRUST}", "--kernels=export_trust_wild_store",
                          "-n", "0", f"--export-failures={out}", results_dir=tmp_path / "runs", timeout=240)
    assert res.returncode == 1, res.output[-3000:]
    assert res.run_data()["tests"], res.output[-3000:]
    where = next(out.iterdir())
    wrong = rerun(where)
    assert wrong.returncode == WRONG and "out-of-bounds store" in wrong.stdout, said(wrong)


@pytest.mark.slow  # a suite run of its own (a crashing or hanging one before)
def test_a_garbage_trip_count_does_not_hang_the_export(tmp_path):
    """The loop count read out of bounds is the guard region's poison (2145756581) once the memory check is off:
    the export's rerun ran for hours. With the check on, it stops at the read."""
    out = tmp_path / "out"
    start = time.monotonic()
    res = start_suite_run("suite/test_kernels.py", f"--kernel-module={TRUST}", "--kernels=export_trust_trip_count",
                          "--case-timeout=60", "-n", "0", f"--export-failures={out}", results_dir=tmp_path / "runs",
                          timeout=150)
    assert res.returncode == 1, res.output[-3000:]
    assert time.monotonic() - start < 120
    assert [p.name for p in out.iterdir()], res.output[-3000:]


@pytest.mark.slow  # a suite run of its own (a crashing or hanging one before)
def test_the_exports_rerun_is_under_the_case_timeout(tmp_path):
    """A rerun that hangs (a GPU kernel the suite's own run escaped) ends at --case-timeout, naming the export, as
    a hung case does; it never holds the run forever."""
    res = start_suite_run("suite/test_kernels.py", f"--kernel-module={TRUST}", "--kernels=export_trust_rerun_hang",
                          "--case-timeout=20", "-n", "0", f"--export-failures={tmp_path / 'out'}",
                          results_dir=tmp_path / "runs", timeout=150)
    assert "--export-failures" in res.output and "--case-timeout=20" in res.output, res.output[-3000:]
    assert res.run_files(), res.output[-3000:]


# --- item 15: the bound of the machine repro.py runs on -----------------------------------------------------

def test_the_bound_is_this_machines_and_is_said(exported, fixed_module):
    """The fp32 dot's operand rounding in the bound is the machine's (the interpreter: IEEE, none), named with its
    hardware profile."""
    right = rerun(folder(exported, "export_trust_dot"), f"--module={fixed_module}")
    assert right.returncode == RIGHT, said(right)
    assert "fp32 dot precision ieee" in right.stdout and "Triton CPU interpreter" in right.stdout, said(right)


@pytest.mark.skipif(not os.environ.get("SUITE_TEST_GPU_REPRO"), reason="needs an NVIDIA GPU with TF32 dots "
                    "(SUITE_TEST_GPU_REPRO=1)")
def test_a_fixed_dot_exported_from_the_interpreter_is_not_wrong_on_a_tf32_gpu(exported, fixed_module):
    """Exported from the interpreter (IEEE fp32 dots: no operand rounding in the bound), rerun on an NVIDIA GPU,
    whose fp32 dots round their operands to TF32: the bound is the GPU's, so the fixed kernel is not STILL WRONG."""
    res = rerun(folder(exported, "export_trust_dot"), f"--module={fixed_module}", gpu=True)
    assert res.returncode in (RIGHT, CANNOT_CONFIRM) and "STILL WRONG" not in res.stdout, said(res)
    assert "fp32 dot precision tf32" in res.stdout, said(res)


@pytest.mark.skipif(not os.environ.get("SUITE_TEST_GPU_REPRO"), reason="needs a GPU (SUITE_TEST_GPU_REPRO=1)")
def test_a_race_is_not_confirmed_on_a_gpu(exported, fixed_module):
    """A GPU cannot run the suite's race check: an exported race reads NOT CONFIRMED there, fixed or not, never
    RIGHT; --interpret runs the check on the same machine."""
    where = folder(exported, "export_trust_race")
    for args in ((), (f"--module={fixed_module}",)):
        res = rerun(where, *args, gpu=True)
        assert res.returncode == CANNOT_CONFIRM and "--interpret" in res.stdout, said(res)


# --- found by trying to make a wrong kernel read RIGHT ------------------------------------------------------

def swapped_run(tmp_path: Path, kernel: str, body: str, plant: str | None = None) -> Path:
    """A fixed module whose kernel ``kernel`` runs ``_run`` from ``body`` (``_old``: its own run); ``plant``: a
    PLANTED_* flag put back."""
    text = fixed(TRUST.read_text())
    if plant:
        text = re.sub(rf"^({plant} = (?:tl\.constexpr\()?)0", r"\g<1>1", text, flags=re.MULTILINE)
    text += (f"\nimport dataclasses as _dc\nfrom kernels import registry as _registry\n"
             f"_spec = _registry._REGISTRY.pop({kernel!r})\n_old = _spec.run\n{body}\n"
             f"_registry._REGISTRY[{kernel!r}] = _dc.replace(_spec, run=_run)\n")
    path = tmp_path / f"{kernel}_swapped.py"
    path.write_text(text)
    return path


def test_a_module_that_changes_the_checks_is_never_right(exported, tmp_path):
    """A kernel module can reach what repro.py judges with: a carried check replaced, or a method added to
    torch.Tensor that shadows its base class's (``!=``, which the integer comparison uses) both read RIGHT for a
    wrong kernel unless the change itself is the verdict."""
    where = folder(exported, "export_trust_int")
    wrong = re.sub(r"^(PLANTED_INT = tl\.constexpr\()0", r"\g<1>1", fixed(TRUST.read_text()), flags=re.MULTILINE)
    for name, change in (
            ("shadowed", "torch.Tensor.__ne__ = lambda a, b: torch.zeros(a.shape, dtype=torch.bool)"),
            ("replaced", "import suite.checks.tolerance as _t\n_t.check_output = lambda name, *a, **k: "
                         "_t.OutputCheck(name, True, 0.0, 0.0, 'ok')")):
        module = tmp_path / f"{name}.py"
        module.write_text(f"{wrong}\n{change}\n")
        res = rerun(where, f"--module={module}")
        assert res.returncode == WRONG and "changed what this script checks with" in res.stdout, (name, said(res))


def test_a_kernel_right_only_at_its_first_launch_is_wrong(exported, tmp_path):
    """Right at the first launch of a process and wrong after (a cache, a warm-up): one run read RIGHT."""
    body = "_calls = []\ndef _run(inp, out, cfg):\n    _calls.append(1)\n    _old(inp, out, cfg)\n" \
           "    if len(_calls) > 1:\n        out['out'].mul_(2)"
    res = rerun(folder(exported, "export_trust_writes_input"),
                f"--module={swapped_run(tmp_path, 'export_trust_writes_input', body)}")
    assert res.returncode == WRONG, said(res)


def test_the_process_is_not_the_modules_to_end(exported, tmp_path):
    """os._exit from the launcher (or posix._exit) ended the script with the module's status, 0 included."""
    body = "import posix as _posix\ndef _run(inp, out, cfg):\n    _posix._exit(0)"
    res = rerun(folder(exported, "export_trust_writes_input"),
                f"--module={swapped_run(tmp_path, 'export_trust_writes_input', body)}")
    assert res.returncode == WRONG and "end the process" in res.stdout, said(res)


def test_usage_mistakes_are_the_scripts_own(exported):
    """argparse ends a usage mistake with status 2 (CANNOT RUN HERE); --runs=0 ran nothing and read RIGHT."""
    where = folder(exported, "export_trust_int")
    assert rerun(where, "--no-such-option").returncode == OWN_FAILURE
    assert rerun(where, "--runs=0").returncode == OWN_FAILURE
