"""The compile matrix: every kernel x config x target compiled with no GPU, through Triton's own compiler.

``compile_one`` compiles one (kernel, dtype, config) for one target (``hardware_profiles.targets()``) with
``triton.compile(ASTSource(...), target=GPUTarget(...))`` and returns a JSON-able record: status, failure class,
shared memory against the target profile's limit, registers, spills, an occupancy estimate, and whether tensor-core
(mma/wgmma/tcgen05, MFMA) and 128-bit global memory instructions were emitted. Triton's on-disk cache
(``~/.triton/cache`` or ``TRITON_CACHE_DIR``) makes reruns fast.

What a launch would reject but the compiler does not (Triton checks these when it loads the binary on a device)
is recorded as a failure too, with the message the launch would raise: a vendor's option unknown to the other
backend (hazard 4; ``triton.compile`` drops it silently), more threads per block than the target allows (hazard 5),
shared memory/LDS over the profile's limit (hazard 6).

Arguments are specialized as a launch on fresh tensors whose sizes and strides are multiples of 16 would be:
pointers and integers divisible by 16 (plus 32-bit buffer offsets on HIP, as for tensors under 2 GB). Unit strides
are what a spec's ``compile_signature`` makes constexpr; integers it leaves free are taken as multiples of 16.

``SUITE_COMPILE_MATRIX=ci`` (default) compiles, per kernel and target, the family's default config for every
supported dtype plus at most ``CI_EXTRA_CONFIGS`` other configs for one dtype; ``SUITE_COMPILE_MATRIX=full``
compiles every config for every dtype.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.compiler import make_backend
from triton.runtime.errors import OutOfResources
from triton.runtime.jit import JITFunction

import hardware_profiles
from kernels.spec import KernelSpec, split_config

FAILURE_CLASSES = ("out_of_shared_memory", "too_many_threads", "unsupported_dtype_or_op", "invalid_option_for_vendor",
                   "other")
# Error texts of Triton 3.6 (and of the launch checks it runs on load), first match wins.
_CLASS_PATTERNS = (
    ("invalid_option_for_vendor", r"was specified but unrecognised|unexpected keyword argument|must be a power of 2"
                                  r"|num_ctas > 1 not supported"),
    ("out_of_shared_memory", r"out of resource: shared memory|too much shared data|local memory \(\d+\) exceeds"
                             r"|shared memory.*exceed|exceeds? .*(shared memory|LDS)"),
    ("too_many_threads", r"out of resource: threads|flat-work-group-size|too many threads|maxntid|reqntid"),
    ("unsupported_dtype_or_op", r"input_precision must be one of|not supported|unsupported|failed to legalize"
                                r"|cannot be lowered|no fp8|type fp8\w* not"),
)
CI_EXTRA_CONFIGS = 3
DEFAULT_NUM_WARPS = 4
_ERROR_LINES = 4
_CUOBJDUMP = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
_TENSOR_CORE = {"cuda": re.compile(r"\b(?:mma\.sync|wgmma\.mma_async|tcgen05\.mma)"),
                "hip": re.compile(r"\bv_(?:s|d)?mfma|\bv_wmma")}
_WIDE_MEMORY = {
    "cuda": re.compile(r"\b(?:ld|st)\.global(?:\.[\w:]+)*\.(?:v4\.[bfsu]32|v2\.[bfsu]64|b128|v8\.[bf]16)\b"
                       r"|\bcp\.async\.cg\.shared\.global(?:\.[\w:]+)*\s*\[[^\]]*\],\s*\[[^\]]*\],\s*(?:16|0x10)\b"),
    "hip": re.compile(r"\b(?:global|buffer)_(?:load|store)(?:_lds)?_(?:dwordx4|b128)\b"),
}
_MAX_WAVES_PER_SIMD = 8  # CDNA2/3/4: 512 VGPRs per lane shared by at most 8 waves
_SIMDS_PER_CU = 4  # CDNA ISA guides: a compute unit has four SIMD units sharing the LDS
_memo: dict[tuple, dict] = {}
_jit_of: dict[int, tuple[Any, JITFunction]] = {}


def mode() -> str:
    """The compile-matrix selection, from ``SUITE_COMPILE_MATRIX`` (ci or full)."""
    value = os.environ.get("SUITE_COMPILE_MATRIX", "ci").strip().lower() or "ci"
    if value not in ("ci", "full"):
        raise ValueError(f"SUITE_COMPILE_MATRIX must be 'ci' or 'full', got {value!r}")
    return value


def family_of(target: tuple[str, str, int]) -> str:
    return "nvidia" if target[0] == "cuda" else "amd"


def jit_function(fn: Any) -> JITFunction:
    """What ``ASTSource`` can compile. Under ``TRITON_INTERPRET=1`` ``@triton.jit`` returns an InterpretedFunction,
    which ``triton.compile`` rejects (it has no ``cache_key``); it keeps the Python function and the jit arguments,
    so a JITFunction is built over them, seeing JITFunctions for the jitted helpers named in its module globals
    (helpers reached as ``module.helper`` or through closures are not converted)."""
    if isinstance(fn, JITFunction):
        return fn
    if not (hasattr(fn, "fn") and hasattr(fn, "kwargs") and callable(fn.fn)):
        raise TypeError(f"not a @triton.jit function: {fn!r}")
    if id(fn) in _jit_of:
        return _jit_of[id(fn)][1]
    jit = JITFunction(fn.fn, **fn.kwargs)
    _jit_of[id(fn)] = (fn, jit)  # keeps fn alive so its id is not reused
    scope = dict(fn.fn.__globals__)
    for name, value in scope.items():
        if type(value).__name__ == "InterpretedFunction":
            scope[name] = jit_function(value)
    jit.__globals__ = scope
    return jit


def classify_error(text: str) -> str:
    """The failure class of a compile or launch error message."""
    for name, pattern in _CLASS_PATTERNS:
        if re.search(pattern, text, re.IGNORECASE):
            return name
    return "other"


def error_excerpt(exc: BaseException) -> str:
    """The first few informative lines of an error: no source echo, no temp-file repro command."""
    text = getattr(exc, "error_message", None) or str(exc)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("Repro command")]
    return f"{type(exc).__name__}: " + "\n".join(ln[:300] for ln in lines[:_ERROR_LINES])


def parse_cuobjdump(text: str) -> dict[str, int]:
    """REG, STACK, LOCAL (and SHARED) of the first function in ``cuobjdump --dump-resource-usage`` output."""
    m = re.search(r"Function [^:\n]+:\s*\n\s*(.*)", text)
    fields = dict(re.findall(r"(\w+(?:\[\d+\])?):(\d+)", m[1])) if m else {}
    return {k.lower(): int(fields[k]) for k in ("REG", "STACK", "LOCAL", "SHARED") if k in fields}


def parse_amdgcn(asm: str) -> dict[str, int]:
    """VGPRs (arch + accumulation), SGPRs, spills and LLVM's waves-per-SIMD occupancy from AMDGCN assembly."""
    out = {}
    for key, pattern in (("vgpr_count", r"\.vgpr_count:\s+(\d+)"), ("sgpr_count", r"\.sgpr_count:\s+(\d+)"),
                         ("agpr_count", r"\.agpr_count:\s+(\d+)"), ("vgpr_spill_count", r"\.vgpr_spill_count:\s+(\d+)"),
                         ("sgpr_spill_count", r"\.sgpr_spill_count:\s+(\d+)"), ("occupancy", r"; Occupancy: (\d+)"),
                         ("scratch_bytes", r"; ScratchSize: (\d+)")):
        if m := re.search(pattern, asm):
            out[key] = int(m[1])
    return out


def nvidia_occupancy(regs: int | None, num_warps: int, shared: int, profile: Any) -> tuple[int, float] | None:
    """(resident warps per SM, fraction of the SM's maximum) as limited by registers, shared memory and threads."""
    if not profile.max_threads_per_sm:
        return None
    threads = num_warps * profile.warp_size
    blocks = [profile.max_threads_per_sm // threads]
    if regs and profile.registers_per_sm:
        blocks.append(profile.registers_per_sm // (regs * threads))
    if shared:
        blocks.append(profile.shared_memory_per_block_bytes // shared)
    warps = min(blocks) * num_warps
    return warps, warps / (profile.max_threads_per_sm // profile.warp_size)


def amd_occupancy(amd: Mapping[str, int], num_warps: int, shared: int, profile: Any) -> tuple[int, float] | None:
    """(waves per SIMD, fraction of 8): LLVM's figure (or 512 // VGPRs), further limited by Triton's LDS, which
    LLVM does not see (it reports 0 bytes of LDS for Triton's dynamic allocation)."""
    waves = amd.get("occupancy")
    if waves is None and amd.get("vgpr_count"):
        waves = min(_MAX_WAVES_PER_SIMD, (profile.vgprs_per_lane or 512) // amd["vgpr_count"])
    if waves is None:
        return None
    if shared:
        waves = min(waves, profile.shared_memory_per_block_bytes // shared * num_warps // _SIMDS_PER_CU)
    return waves, waves / _MAX_WAVES_PER_SIMD


def _attrs(signature: Mapping[str, str], backend: str) -> dict[tuple[int], list]:
    attrs = {}
    for i, ty in enumerate(signature.values()):
        if ty.startswith("*"):
            attrs[(i,)] = [["tt.divisibility", 16]] + ([["tt.pointer_range", 32]] if backend == "hip" else [])
        elif re.fullmatch(r"[iu](32|64)", ty):
            attrs[(i,)] = [["tt.divisibility", 16]]
    return attrs


def _cuda_resources(cubin: bytes) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        out = subprocess.run([str(_CUOBJDUMP), "--dump-resource-usage", str(path)], capture_output=True, text=True,
                             timeout=60)
    return parse_cuobjdump(out.stdout)


def _resources(record: dict, kernel: Any, backend: str, num_warps: int, profile: Any) -> None:
    shared = int(kernel.metadata.shared)
    limit = profile.shared_memory_per_block_bytes
    record.update(shared_bytes=shared, shared_limit_bytes=limit, shared_fraction=round(shared / limit, 4))
    asm = kernel.asm["ptx" if backend == "cuda" else "amdgcn"]
    if backend == "cuda":
        res = _cuda_resources(kernel.asm["cubin"])
        spill = res.get("stack", 0) + res.get("local", 0)
        record.update(registers=res.get("reg"), stack_bytes=res.get("stack"), spills=spill > 0, spill_count=spill)
        occ = nvidia_occupancy(res.get("reg"), num_warps, shared, profile)
    else:
        res = parse_amdgcn(asm)
        spill = res.get("vgpr_spill_count", 0) + res.get("sgpr_spill_count", 0)
        record.update(registers=res.get("vgpr_count"), sgprs=res.get("sgpr_count"), spills=spill > 0,
                      spill_count=spill, vgpr_spills=res.get("vgpr_spill_count"))
        occ = amd_occupancy(res, num_warps, shared, profile)
    record.update(occupancy_warps=occ[0] if occ else None, occupancy=round(occ[1], 4) if occ else None)
    uses_dot = bool(re.search(r"\btt\.dot", kernel.asm.get("ttir", "")))
    record.update(uses_dot=uses_dot, tensor_cores=bool(_TENSOR_CORE[backend].search(asm)) if uses_dot else None,
                  wide_memory_ops=len(_WIDE_MEMORY[backend].findall(asm)))


def compile_one(spec: KernelSpec, dtype: str, config: Mapping[str, Any], target: tuple[str, str, int],
                default: bool = False) -> dict[str, Any]:
    """Compile ``spec`` for ``dtype`` with ``config`` (constexprs and launch options) for ``target``."""
    backend, arch, warp = target
    config = dict(config)
    key = (spec.name, id(spec.jit_fn), dtype, json.dumps(config, sort_keys=True, default=str), arch)
    if key in _memo:
        return {**_memo[key], "config": dict(config), "default": default}
    profile = hardware_profiles.representative(arch)
    record: dict[str, Any] = {"kind": "compile", "kernel": spec.name, "dtype": dtype, "target": arch, "backend": backend,
                              "family": family_of(target), "profile": profile.key, "config": config, "default": default,
                              "status": "ok", "failure_class": None, "error": None, "triton": triton.__version__}
    meta, options = split_config(config)
    options.setdefault("num_warps", DEFAULT_NUM_WARPS)
    if spec.jit_fn is None or spec.compile_signature is None:
        return {**record, "status": "skipped", "error": "not compilable offline: the spec has no jit_fn/compile_signature"}
    if not _supports(profile, dtype):
        return {**record, "status": "skipped", "error": f"dtype unsupported on {arch} ({profile.key} profile)"}
    known = {f.name for f in dataclasses.fields(make_backend(GPUTarget(backend, _arch(target), warp)).parse_options({}))}
    foreign = sorted(k for k in options if k not in known)
    threads = options["num_warps"] * warp
    if foreign:  # the launch raises this before compiling; triton.compile would drop the option silently
        error = f"KeyError: 'Keyword argument {foreign[0]} was specified but unrecognised' (launch on {backend})"
        return {**record, "status": "failed", "failure_class": "invalid_option_for_vendor", "error": error}
    signature, constexprs = spec.compile_signature(dtype, meta)
    source = ASTSource(fn=jit_function(spec.jit_fn), signature=signature, constexprs=constexprs,
                       attrs=_attrs(signature, backend))
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # a ptxas failure prints the whole PTX
            kernel = triton.compile(source, target=GPUTarget(backend, _arch(target), warp), options=options)
    except Exception as exc:  # noqa: BLE001 - every compiler error is a finding to classify
        cls = "too_many_threads" if threads > profile.max_threads_per_block else classify_error(str(exc))
        record.update(status="failed", failure_class=cls, error=error_excerpt(exc),
                      compile_seconds=round(time.perf_counter() - start, 3))
        _memo[key] = record
        return dict(record)
    record["compile_seconds"] = round(time.perf_counter() - start, 3)
    _resources(record, kernel, backend, options["num_warps"], profile)
    # What the launch checks on load (triton's CompiledKernel._init_handles), against the profile's limits.
    if threads > profile.max_threads_per_block:
        record.update(status="failed", failure_class="too_many_threads", error="OutOfResources at launch: "
                      + str(OutOfResources(threads, profile.max_threads_per_block, "threads")))
    elif record["shared_bytes"] > profile.shared_memory_per_block_bytes:
        record.update(status="failed", failure_class="out_of_shared_memory", error="OutOfResources at launch: "
                      + str(OutOfResources(record["shared_bytes"], profile.shared_memory_per_block_bytes,
                                           "shared memory")))
    _memo[key] = record
    return dict(record)


def _supports(profile: Any, dtype: str) -> bool:
    try:
        return profile.supports(dtype)
    except ValueError:  # a dtype name the profiles do not know: nothing vouches for it
        return False


def _arch(target: tuple[str, str, int]) -> int | str:
    return int(target[1].removeprefix("sm_")) if target[0] == "cuda" else target[1]


def plan(spec: KernelSpec, target: tuple[str, str, int], selection: str | None = None
         ) -> list[tuple[str, dict[str, Any], bool]]:
    """(dtype, config, is_default) to compile for ``target``: see the module docstring for ci and full."""
    selection = selection or mode()
    family = family_of(target)
    default = dict(spec.default_config.get(family, {}))
    others: list[dict] = []
    for cfg in spec.configs.get(family, ()):
        if dict(cfg) != default and dict(cfg) not in others:
            others.append(dict(cfg))
    profile = hardware_profiles.representative(target[1])
    supported = [d for d in spec.dtypes if _supports(profile, d)]
    main = "fp16" if "fp16" in supported else (supported or list(spec.dtypes) or ["fp32"])[0]
    jobs = [(d, default, True) for d in spec.dtypes]
    for d in (spec.dtypes if selection == "full" else [main]):
        if d in supported:
            jobs += [(d, cfg, False) for cfg in (others if selection == "full" else others[:CI_EXTRA_CONFIGS])]
    return jobs


def compile_kernel(spec: KernelSpec, target: tuple[str, str, int], selection: str | None = None) -> list[dict]:
    return [compile_one(spec, dtype, cfg, target, default=is_default) for dtype, cfg, is_default in
            plan(spec, target, selection)]


def summary_rows(records: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """Kernel x target: ok and failure counts by class, max registers, spills, min occupancy."""
    table: dict[tuple[str, str], dict] = defaultdict(lambda: {"ok": 0, "failed": defaultdict(int), "skipped": 0,
                                                               "regs": [], "spills": False, "occ": []})
    for r in records:
        row = table[(r["kernel"], r["target"])]
        if r["status"] == "failed":
            row["failed"][r.get("failure_class") or "other"] += 1
        else:
            row[r["status"]] = row.get(r["status"], 0) + 1
        if r.get("registers") is not None:
            row["regs"].append(r["registers"])
        row["spills"] = row["spills"] or bool(r.get("spills"))
        if r.get("occupancy") is not None:
            row["occ"].append(r["occupancy"])
    headers = ["kernel", "target", "ok", "failed", "skipped", "max regs", "spills", "min occupancy"]
    rows = []
    for (kernel, target), row in sorted(table.items()):
        failed = ", ".join(f"{n} {cls}" for cls, n in sorted(row["failed"].items())) or "0"
        rows.append([kernel, target, row["ok"], failed, row["skipped"], max(row["regs"], default="-"),
                     "yes" if row["spills"] else "no", f"{min(row['occ']):.2f}" if row["occ"] else "-"])
    return headers, rows
