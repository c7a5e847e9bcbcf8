"""``--export-failures=DIR``: each failing case of a reference test as a folder that reruns it without the suite.

The folder (docs/checks.md, "A finding that travels") holds ``repro.py`` (suite/tools/repro_template.py);
``case.pt``: the exact inputs and poisoned, guarded outputs the case's launch starts from (every storage whole, so
views and guard regions come back as they were), where each output holds the poison, the outputs the export's own
rerun produced, and the reference and magnitude each output is judged by; ``meta.json``: the case, the config, the
message, what the finding was, every check the suite applied to the case, the tolerance's terms, the toolchain and
the flags that change numerics; the kernel's module as the suite loaded it, with the helper modules beside it that it
imported (``kernel/``); the spec API it imports (``api/kernels``, the suite's kernels/ folder) and the hardware
profiles (``api/hardware_profiles``: repro.py reads its machine's fp32 dot precision as the suite does); and the
suite's own check modules repro.py judges with (``checks/``), with stand-ins for the suite's session state.

The case is run once more to capture it (inputs rebuilt from its seed, the same config), as the suite ran it: under
the interpreter's memory check (a wild store or a loop count read out of bounds stops there, as it did in the test)
and under ``--case-timeout``; a memory finding on a GPU is not run again (its rerun could fault the process's GPU
context). That rerun is judged: a failure that did not happen again was intermittent, and repro.py then runs the case
20 times and never reads RIGHT. A folder is never replaced: an export whose name is taken (another run's, or a name
cut to its 120 characters) gets a name of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import torch

import hardware_profiles
from kernels import registry
from kernels.spec import Case, KernelSpec
from reports import nodeids
from reports.failure_kinds import FailureKind
from suite.checks import flushes, harness, memcheck, restride, returned, spec_code
from suite.checks.tolerance import DOT_OPERAND_ROUNDOFF, unit_roundoff
from suite.session import options
from suite.workers import crash

TEMPLATE = Path(__file__).resolve().parent / "repro_template.py"
CHECKS_DIR = Path(__file__).resolve().parents[1] / "checks"
# The suite's check modules repro.py judges with, copied as they are (checks/suite/checks/ in the folder), and the
# interpreter's fill-ins (interpreter.py with the modules it imports, and suite/compat.py's version-specific fixes):
# on the interpreter the kernel runs as the suite ran it.
CARRIED_CHECKS = ("tolerance.py", "overflow.py", "ties.py", "launches.py", "memcheck.py", "barriers.py", "returned.py",
                  "interpreter.py", "interpreter_bf16.py", "semantic_gaps.py", "_interpreter_probe.py")
COMPAT = Path(__file__).resolve().parents[1] / "compat.py"
# Environment variables that change what a kernel computes or how Triton builds it: recorded with the case.
NUMERIC_FLAGS = ("TRITON_F32_DEFAULT", "TRITON_INTERPRET", "TRITON_DEFAULT_FP_FUSION", "TRITON_ENABLE_FAST_MATH",
                 "AMDGCN_USE_BUFFER_OPS", "TRITON_HIP_USE_BLOCK_PINGPONG", "NVIDIA_TF32_OVERRIDE",
                 "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE")
RULE = ("bound = safety * ((operand_u + sqrt(K) * u_acc) * |magnitude| + u_out * |reference|) + tiny, per element "
        "(docs/checks.md#tolerances)")
NAME_LIMIT = 120  # characters of a folder's name
FORMAT = 2  # meta.json's layout (repro_template.FORMAT)
# Stand-ins for what the carried check modules import of the suite beyond themselves: its session state (one
# object), the patch registry (which checks the installed Triton; repro.py's hooks fail where it moved) and pytest
# (memcheck.py's usage error), each what the carried modules use of it and nothing more.
STANDINS = {
    "suite/__init__.py": '"""Stand-ins for the suite beside the check modules repro.py carries."""\n',
    "suite/checks/__init__.py": '"""The suite\'s check modules, copied from suite/checks/ by --export-failures."""\n',
    "suite/session/__init__.py": "",
    "suite/session/stash.py": '''
"""What the carried check modules keep while repro.py runs: the fields of the suite's Session they use."""

import threading
from collections import Counter


class Session:
    def __init__(self) -> None:
        self.checker = None  # memcheck.Checker, once installed
        self.sanitizer_log_offset = {}
        self.untuned = {}
        self.launches = threading.local()
        self.bf16_operations = Counter()
        self.fp8_casts = Counter()


_session = Session()


def session() -> Session:
    return _session
''',
    # Where packaging (which suite/compat.py needs) is not installed: enough of it for the launch and memory hooks.
    "standins/suite_compat.py": '''
"""The suite's patch registry, as the launch and memory hooks use it: which patches this process applied."""

_applied = set()


def require(name):
    return None  # the hooks themselves fail where the installed Triton moved what they patch


def applied(*names):
    return set(names) <= _applied


def mark_applied(*names):
    _applied.update(names)
''',
    "standins/pytest_standin.py": '''"""What memcheck.py uses of pytest, where pytest is not installed."""


class UsageError(Exception):
    pass
''',
}


def folder_name(nodeid: str, case: Case) -> str:
    """A directory name from the test and the case: letters, digits, '.', '_', '-' only, at most NAME_LIMIT
    characters. A name that had to be cut or changed ends in a digest of the whole, so that two test ids alike in
    their first 120 characters (or alike once their other characters are replaced) name two folders."""
    test = nodeids.parse(nodeid)
    within = test.function if test.param is None else test.param  # a part's too: matmul-fp32-part2of3
    raw = f"{within}-seed{case.seed}"
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", raw).strip("_.-") or "case"  # no name a shell reads as an option
    if name == raw and len(name) <= NAME_LIMIT:
        return name
    digest = hashlib.sha256(f"{nodeid}\0{case.spec_string()}".encode()).hexdigest()[:12]
    return f"{name[:NAME_LIMIT - len(digest) - 1]}-{digest}"


def claim_folder(directory: Path, name: str) -> Path:
    """A new folder ``directory/name``, or ``name-2``, ``name-3``, ... where that is taken: created here, never an
    existing one (another run's export, perhaps with a fix in its kernel/ copy, or another worker's at this moment)."""
    directory.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        folder = directory / (name if n == 1 else f"{name[:NAME_LIMIT - 6]}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise FileExistsError(f"{directory / name}: 9999 folders of that name already")


def _storages(values: dict[str, Any]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Each tensor's whole storage once, as its bytes on the CPU (a bool's poison byte, a NaN's payload kept as they
    are: a copy of a bool tensor makes every byte 0 or 1); and each tensor as a view of its storage (in its own
    dtype's elements); other values as they are."""
    storages: dict[str, torch.Tensor] = {}
    keys: dict[int, str] = {}
    out: dict[str, Any] = {}
    for name, value in values.items():
        if not isinstance(value, torch.Tensor):
            out[name] = value
            continue
        ptr = value.untyped_storage().data_ptr()
        if ptr not in keys:
            keys[ptr] = f"s{len(keys)}"
            raw = torch.empty(0, dtype=torch.uint8, device=value.device).set_(value.untyped_storage())
            storages[keys[ptr]] = raw.detach().cpu().clone()
        out[name] = {"view_of": keys[ptr], "size": list(value.shape), "stride": list(value.stride()),
                     "offset": value.storage_offset(), "dtype": str(value.dtype)}
    return storages, out


def _as_built(storages: dict[str, torch.Tensor], views: dict[str, Any], names, device: str) -> dict[str, Any]:
    """The values ``names`` as case.pt holds them (each tensor a view of a copy of its storage on ``device``): the
    inputs the folder carries, whatever make_inputs would draw if called again."""
    copies = {key: data.to(device, copy=True) for key, data in storages.items()}
    out = {}
    for name in names:
        item = views[name]
        if isinstance(item, dict) and item.get("view_of") is not None:
            dtype = getattr(torch, item["dtype"].removeprefix("torch."))
            out[name] = torch.as_strided(copies[item["view_of"]].view(dtype), item["size"], item["stride"],
                                         item["offset"])
        else:
            out[name] = item
    return out


def finding_of(failure: str | None, message: str) -> str:
    """The check that can tell the suite's finding is fixed (a key of repro_template.CHECKS)."""
    if failure == "memory":
        if "data race" in message:
            return "races"
        if re.search(r"out-of-bounds (load|store|atomic) in kernel", message):
            return "memory"
        if "(out-of-bounds store)" in message:
            return "guards"
        return "sanitizer"
    if "never written" in message:
        return "unwritten"
    if "the kernel changed its input" in message:
        return "inputs"
    return "values"


def _launch_required(spec: KernelSpec, case: Case, config: dict) -> bool:
    """Whether the suite held the case to a @triton.jit launch: not where the spec's torch_fallback covers it."""
    if spec.torch_fallback is None:
        return True
    try:
        return not spec_code.call(spec, "torch_fallback", spec.torch_fallback, case, config)
    except spec_code.SpecRaised:
        return True


def checks_applied(spec: KernelSpec, backend: Any, outputs: dict, guards: dict, required: bool) -> list[str]:
    """The checks the suite applied to the case (repro_template.CHECKS' keys)."""
    found = ["values", "inputs"]
    if any(name not in spec.initial_outputs for name in outputs):
        found.append("unwritten")
    if guards:
        found.append("guards")
    if required:
        found.append("launched")
    if not returned.returns_outputs(spec):
        found.append("reached")
    checker = memcheck.active()
    if backend.name == "interpret" and checker is not None:
        found.append("memory")
        if checker.races is not None:
            found.append("races")
    if os.environ.get(memcheck.SANITIZER_ENV):
        found.append("sanitizer")
    return found


def _rerun(spec: KernelSpec, case: Case, config: dict, backend: Any, failure: str | None,
           inputs: dict, outputs: dict, guards: dict, clean: dict) -> tuple[bool | None, str]:
    """The case run once more on ``inputs`` and ``outputs``, as the suite ran it, and judged: (whether the failure
    happened again, what the rerun showed); (None, why) where it was not run."""
    if failure == "memory" and backend.name != "interpret":
        return None, "not run again: a memory finding on a GPU (its rerun could fault the GPU context)"
    snapshot = harness.InputSnapshot(spec, inputs)
    try:
        harness.launch(spec, inputs, outputs, config)
        harness.synchronize(backend.device)
    except Exception as exc:  # noqa: BLE001 - the rerun's failure is the finding as it happened again
        violation = memcheck.violation_in(exc)
        if violation is None:
            crash.note_launch_error(exc, backend.device, case)  # a fault: the worker is replaced after this test
        exc.__traceback__ = None
        return True, f"stopped: {violation or f'{type(exc).__name__}: {exc}'}"[:2000]
    problems = harness.guard_violations(guards) + snapshot.changes(allowed=spec.mutable_inputs)
    ref = harness.check_reference(spec, case, clean, outputs, spec.reference(clean, case))
    checks = harness._check_outputs(spec, case, backend, config, clean, outputs, ref,
                                    harness.magnitudes(spec, clean, ref))
    problems += [c.detail for c in checks if not c.passed]
    return bool(problems), "; ".join(problems)[:2000] or "right: the failure did not happen again"


def export_case(spec: KernelSpec, case: Case, config: dict, backend: Any, directory: Path, nodeid: str,
                message: str, repro_line: str, failure: str | None, intermittent: dict | None = None) -> Path:
    """Write the folder for one failing case (see the module docstring); its path. ``intermittent``: the rate the
    suite measured where the test's failure was intermittent."""
    folder = claim_folder(Path(directory), folder_name(nodeid, case))
    # Under --case-timeout as the case was: its rerun (a GPU kernel that hangs this time) and its reference.
    hung = "the --export-failures rerun of the case"
    try:
        with crash.watchdog(case, options.config_args(spec, config, backend.family), hung):
            _write(folder, spec, case, config, backend, nodeid, message, repro_line, failure, intermittent)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # this export's own folder, half written
        raise
    return folder


def _write(folder: Path, spec: KernelSpec, case: Case, config: dict, backend: Any, nodeid: str, message: str,
           repro_line: str, failure: str | None, intermittent: dict | None) -> None:
    inputs, _ = restride.inputs(spec, case, spec.make_inputs(case, backend.device))  # the case's restride, if any
    outputs, guards = harness.prepare_outputs(spec, inputs, case)
    passed = list(outputs)
    storages, views = _storages({**inputs, **outputs})
    poisoned = {name: name not in spec.initial_outputs for name in passed}
    poison = {name: harness.unwritten(outputs[name]).cpu() for name in passed if poisoned[name]}
    required = _launch_required(spec, case, config)
    checked = checks_applied(spec, backend, outputs, guards, required)
    # The reference of the inputs case.pt carries (a make_inputs that ignores the seed draws others if called again).
    clean = _as_built(storages, views, list(inputs), backend.device)
    reproduced, rerun = _rerun(spec, case, config, backend, failure, inputs, outputs, guards, clean)
    produced = {name: t.detach().cpu().clone() for name, t in outputs.items()} if reproduced is not None else {}
    clean = _as_built(storages, views, list(inputs), backend.device)  # as built: the rerun may have changed its own
    ref = spec.reference(clean, case)
    mags = harness.magnitudes(spec, clean, ref)
    rules = {}
    for name in spec.outputs:
        tol = spec.tolerance_for(name)
        out = outputs.get(name, ref[name])
        judged_as, _ = returned.judged_dtype(spec, case.dtype, out, tol) if name in outputs else (None, "")
        dtype = judged_as or out.dtype
        rules[name] = {"reduction_length": tol.reduction(case), "safety": tol.safety_for(case.dtype),
                       "accumulator": tol.accumulator_for(case.dtype), "keep_subnormals": flushes.keeps_subnormals(case),
                       "uses_dot": bool(tol.uses_dot), "output_dtype": tol.output_dtype,
                       "u_out": unit_roundoff(dtype), "dtype": str(dtype),
                       "operand_u": harness.operand_roundoff(tol, backend) if case.dtype == "fp32" else 0.0}
    torch.save({"storages": storages, "values": views, "poison": poison, "produced": produced,
                "reference": {name: ref[name].detach().cpu() for name in spec.outputs},
                "magnitude": {name: m.detach().cpu() for name, m in mags.items()}}, folder / "case.pt")
    module_name, source = _kernel_module(spec)
    copy, files = _module_files(module_name, source)
    for file, relative in files:
        (folder / "kernel" / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, folder / "kernel" / relative)
    api = Path(registry.__file__).resolve().parent
    shutil.copytree(api, folder / "api" / "kernels", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    profiles = Path(hardware_profiles.__file__).resolve().parent
    shutil.copytree(profiles, folder / "api" / "hardware_profiles",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "autotune"))
    _carry_checks(folder / "checks")
    import triton

    meta = {
        "format": FORMAT,
        "kernel": spec.name, "dtype": case.dtype, "case": str(case), "repro": case.spec_string(), "config": config,
        "test": nodeid, "message": message, "failure": failure, "suite_repro_line": repro_line,
        "finding": finding_of(failure, message), "checked": checked, "launch_required": required,
        "export_rerun": {"reproduced": reproduced, "what": rerun}, "intermittent": intermittent,
        "module": {"name": module_name, "copy": f"kernel/{copy}", "source": str(source),
                   "files": [f"kernel/{relative}" for _, relative in files]},
        "inputs": list(inputs), "outputs": list(spec.outputs), "outputs_passed": passed, "poisoned": poisoned,
        "distinct_poison": {name: harness.has_distinct_poison(outputs[name].dtype) for name in passed},
        "returns_outputs": returned.returns_outputs(spec), "mutable_inputs": list(spec.mutable_inputs),
        "index_outputs": {name: {"source": rule.source, "dim": rule.dim, "distinct": rule.distinct}
                          for name, rule in spec.index_outputs.items()},
        "rule": RULE, "rules": rules, "fp32_dot_precision": backend.profile.fp32_dot_precision,
        "dot_operand_roundoff": DOT_OPERAND_ROUNDOFF,
        "memory": message if failure == FailureKind.MEMORY else None,
        "toolchain": {"backend": backend.name, "device": getattr(backend, "device_name", None) or str(backend.device),
                      "triton": triton.__version__, "torch": torch.__version__,
                      "flags": {k: os.environ[k] for k in NUMERIC_FLAGS if k in os.environ}},
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    shutil.copy2(TEMPLATE, folder / "repro.py")


def _kernel_module(spec: KernelSpec) -> tuple[str, Path]:
    """(name, file) of the module whose import registered the spec: the --kernel-module the suite loaded (which may
    define ``run`` in a helper, or call register() from one), else the built-in module that registered it."""
    loaded = registry.loaded_by(spec.name)
    if loaded is not None:
        return loaded[0], Path(loaded[1])
    name = f"kernels.{Path(registry.where(spec.name)).stem}"
    module = sys.modules.get(name)
    if module is None or not getattr(module, "__file__", None):
        raise FileNotFoundError(f"the module that registered {spec.name!r} is not known ({registry.where(spec.name)})")
    return name, Path(module.__file__).resolve()


# Files of a package a kernel module imports from beside it (or of the package a dotted --kernel-module lies in)
# that travel with it at most: a library's whole tree is not the kernel's.
MOST_PACKAGE_FILES = 200


def _module_files(module_name: str, source: Path) -> tuple[str, list[tuple[Path, str]]]:
    """(where the kernel module's copy lies in kernel/, every file to copy there with its path in kernel/): the
    module; a dotted module's package (its siblings import as that package's modules); the modules and packages it
    imported from beside it (its folder was on sys.path while it imported, as a script's is). A built-in kernel's
    helpers are the spec API's copy's, in api/kernels."""
    source = source.resolve()
    if module_name.startswith("kernels."):
        return source.name, [(source, source.name)]
    if "." in module_name:  # --kernel-module=package.module: the package travels, under its own name
        root = source.parents[module_name.count(".")]
        package = root / module_name.split(".")[0]
        files = sorted(p for p in package.rglob("*.py") if "__pycache__" not in p.parts)[:MOST_PACKAGE_FILES]
        found = {source, *files}
        return str(source.relative_to(root)), sorted((p, str(p.relative_to(root))) for p in found)
    folder, found = source.parent, {source: source.name}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if "." in name or not file or not file.endswith(".py"):
            continue
        path = Path(file).resolve()
        if path.parent == folder:  # a module beside it
            found.setdefault(path, path.name)
        elif path.name == "__init__.py" and path.parent.parent == folder:  # a package beside it
            for inner in sorted(path.parent.rglob("*.py"))[:MOST_PACKAGE_FILES]:
                if "__pycache__" not in inner.parts:
                    found.setdefault(inner, str(inner.relative_to(folder)))
    return source.name, sorted(found.items(), key=lambda item: item[1])


def _carry_checks(target: Path) -> None:
    """checks/: the suite's own check modules, and the stand-ins they import in place of the rest of the suite."""
    for relative, text in STANDINS.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for name in CARRIED_CHECKS:
        shutil.copy2(CHECKS_DIR / name, target / "suite" / "checks" / name)
    shutil.copy2(COMPAT, target / "suite" / "compat.py")
