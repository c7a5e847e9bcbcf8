"""``--export-failures=DIR``: each failing case of a reference test as a folder that reruns it without the suite.

The folder holds ``repro.py`` (suite/tools/repro_template.py), ``case.pt`` (the exact inputs and poisoned, guarded
outputs the case's launch started from, every storage whole so views and guard regions come back as they were; the
outputs the suite's rerun of the case produced; the expected values and the per-element bound they were judged by),
``meta.json`` (the case, the config, the message, the bound's rule, the toolchain and the flags that change numerics),
a copy of the kernel module (``kernel/``) and of the spec API it imports (``api/kernels``: the suite's kernels/
folder, standard library, torch and triton only). ``python repro.py`` then needs torch and triton alone.

The case is run once more to capture it (inputs rebuilt from its seed, the same config): for a deterministic failure
those are the failing run's outputs; an intermittent one may come out right in that run, and ``repro.py`` says so by
passing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import torch

from kernels import registry
from kernels.spec import Case, KernelSpec
from reports import nodeids
from reports.failure_kinds import FailureKind
from suite.checks import flushes, harness, memcheck, returned, tolerance

TEMPLATE = Path(__file__).resolve().parent / "repro_template.py"
# Environment variables that change what a kernel computes or how Triton builds it: recorded with the case.
NUMERIC_FLAGS = ("TRITON_F32_DEFAULT", "TRITON_INTERPRET", "TRITON_DEFAULT_FP_FUSION", "TRITON_ENABLE_FAST_MATH",
                 "AMDGCN_USE_BUFFER_OPS", "TRITON_HIP_USE_BLOCK_PINGPONG", "NVIDIA_TF32_OVERRIDE",
                 "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE")
RULE = ("bound = safety * ((operand_u + sqrt(K) * u_acc) * |magnitude| + u_out * |reference|) + tiny, per element "
        "(docs/checks.md#tolerances)")


def folder_name(nodeid: str, case: Case) -> str:
    """A directory name from the test and the case: letters, digits, '.', '_', '-' only."""
    test = nodeids.parse(nodeid)
    within = test.function if test.param is None else test.param  # a part's too: matmul-fp32-part2of3
    raw = f"{within}-seed{case.seed}"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", raw).strip("_")[:120]


def _storages(values: dict[str, Any]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Each tensor's whole storage once (on the CPU) and the tensor as a view of it; other values as they are."""
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
            n = value.untyped_storage().nbytes() // value.element_size()
            base = torch.empty(0, dtype=value.dtype, device=value.device)
            base.set_(value.untyped_storage(), 0, (n,), (1,))
            storages[keys[ptr]] = base.detach().cpu().clone()
        out[name] = {"view_of": keys[ptr], "size": list(value.shape), "stride": list(value.stride()),
                     "offset": value.storage_offset(), "dtype": str(value.dtype)}
    return storages, out


def export_case(spec: KernelSpec, case: Case, config: dict, backend: Any, directory: Path, nodeid: str,
                message: str, repro_line: str, failure: str | None) -> Path:
    """Write the folder for one failing case (see the module docstring); its path."""
    folder = Path(directory) / folder_name(nodeid, case)
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "kernel").mkdir(parents=True)
    inputs = spec.make_inputs(case, backend.device)
    outputs, _ = harness.prepare_outputs(spec, inputs, case)
    passed = list(outputs)
    storages, views = _storages({**inputs, **outputs})
    initial = {name: t.detach().cpu().clone() for name, t in outputs.items()}
    # The interpreter's memory check stops an out-of-bounds access before it happens; here the case must run as the
    # kernel wrote it, so that its stores land in the guard regions that case.pt carries and repro.py checks.
    checker = memcheck.active()
    if checker is not None:
        checker.check = lambda *args, **kwargs: None
    try:
        harness.run_spec(spec, inputs, outputs, config)
        harness.synchronize(backend.device)
    finally:
        if checker is not None:
            del checker.check
    produced = {name: outputs[name].detach().cpu().clone() for name in spec.outputs}
    # The reference from inputs as built (a kernel that wrote its inputs gets judged on what it was given).
    clean = spec.make_inputs(case, backend.device)
    ref = spec.reference(clean, case)
    mags = harness.magnitudes(spec, clean, ref)
    expected, bounds, rules = {}, {}, {}
    for name in spec.outputs:
        tol = spec.tolerance_for(name)
        out, r = outputs[name], ref[name].detach().to(torch.float64)
        # As harness._check_outputs judges it: the dtype whose rounding the bound allows (a narrower returned output
        # is judged at its case's), the case's accumulator, the subnormal class's floor.
        judged_as, _ = returned.judged_dtype(spec, case.dtype, out, tol)
        dtype = judged_as or out.dtype
        if out.dtype.is_floating_point and dtype != torch.float64:
            rounded = r.to(dtype).to(torch.float64)
            want = torch.where(torch.isinf(rounded) & torch.isfinite(r), rounded, r)
        else:
            want = r
        mag = mags.get(name)
        mag = want.abs() if mag is None else mag.detach().to(torch.float64).expand(want.shape)
        operand_u = harness.operand_roundoff(tol, backend) if case.dtype == "fp32" else 0.0
        args = dict(reduction_length=tol.reduction(case), safety=tol.safety_for(case.dtype), operand_u=operand_u,
                    accumulator=tol.accumulator_for(case.dtype), keep_subnormals=flushes.keeps_subnormals(case))
        if out.dtype.is_floating_point:
            bnd = tolerance.bound(want, mag.nan_to_num(posinf=0.0, neginf=0.0, nan=0.0), dtype, **args)
        else:
            bnd = torch.zeros_like(want)  # integers match exactly
        expected[name], bounds[name] = want.cpu(), bnd.cpu()
        rules[name] = {**args, "u_out": tolerance.unit_roundoff(dtype), "dtype": str(dtype)}
    torch.save({"storages": storages, "values": views, "initial": initial, "produced": produced,
                "expected": expected, "bound": bounds}, folder / "case.pt")
    module_name = spec.run.__module__  # the module that defines the launch: the one repro.py imports
    module = sys.modules.get(module_name)
    source = Path(getattr(module, "__file__", "") or "")
    if source.is_file():
        shutil.copy2(source, folder / "kernel" / source.name)
    api = Path(registry.__file__).resolve().parent
    shutil.copytree(api, folder / "api" / "kernels", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    import triton

    meta = {
        "kernel": spec.name, "dtype": case.dtype, "case": str(case), "repro": case.spec_string(), "config": config,
        "test": nodeid, "message": message, "failure": failure, "suite_repro_line": repro_line,
        "module": {"name": getattr(module, "__name__", module_name), "copy": f"kernel/{source.name}",
                   "source": str(source)},
        "inputs": list(inputs), "outputs": list(spec.outputs), "outputs_passed": passed,
        "poisoned": {name: name not in spec.initial_outputs for name in passed},
        "returns_outputs": returned.returns_outputs(spec),
        "rule": RULE, "rules": rules,
        "memory": message if failure == FailureKind.MEMORY else None,
        "toolchain": {"backend": backend.name, "device": getattr(backend, "device_name", None) or str(backend.device),
                      "triton": triton.__version__, "torch": torch.__version__,
                      "flags": {k: os.environ[k] for k in NUMERIC_FLAGS if k in os.environ}},
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    shutil.copy2(TEMPLATE, folder / "repro.py")
    return folder

