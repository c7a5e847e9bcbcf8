"""The compile matrix: kernel x config x target compiled with no GPU, through ``triton.compile(ASTSource, GPUTarget)``.

A record per compile: status, failure class, shared memory against the target profile's limit, registers, spills,
an occupancy estimate, tensor-core (mma/wgmma/tcgen05, MFMA) and 128-bit global memory instructions. What a launch
rejects but the compiler accepts (Triton checks it on load) fails with the launch's message: an option the vendor's
backend does not know (hazard 4), more threads than a block may have (hazard 5), shared memory over the limit (6).
Arguments are specialized as the JIT does for 16-byte-aligned tensors and sizes and strides that are multiples of 16
(and 32-bit buffer offsets on HIP), but not a function's ``do_not_specialize`` arguments (the JIT gives them nothing);
unit strides are constexprs only where the spec's ``compile_signature`` says so.

Under ``TRITON_INTERPRET=1`` every ``@triton.jit`` function, triton.language's own (``tl.max``, ``tl.cdiv``, ...)
included, is an InterpretedFunction: ``triton.compile`` rejects it, and the code generator calling one leaves
triton.language patched for the interpreter. So when the kernels are interpreted, compiles run in a child process
started without TRITON_INTERPRET (``python -m suite.tools.compile_matrix``, one per test process, JSON lines on stdin/out).

``SUITE_COMPILE_MATRIX=defaults`` (default): per kernel and target, the family's default config (what users run)
for every dtype. ``ci`` (``.ci/run`` runs it in a step of its own): those plus at most ``CI_EXTRA_CONFIGS`` other
configs for fp16 (or the first supported dtype), whose failures are findings, not test failures; about half the
compiles of a run on the interpreter, so off its default command. ``full``: every config for every dtype. Triton's
on-disk cache (``~/.triton/cache``, ``TRITON_CACHE_DIR``) makes reruns fast.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import importlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
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
from kernels import registry
from kernels.spec import KernelSpec, scoped_config, split_config, unwrap_jit
from suite.checks import amdgcn_hazards
from suite.session import stash
from suite.workers import timing

Target = tuple[str, str, int]  # (backend, arch, warp size), as hardware_profiles.targets() gives them
FAILURE_CLASSES = ("out_of_shared_memory", "too_many_threads", "unsupported_dtype_or_op", "invalid_option_for_vendor",
                   "other")
# Triton 3.6's compile errors and launch checks; the first match wins.
_CLASS_PATTERNS = (
    ("invalid_option_for_vendor", r"was specified but unrecognised|unexpected keyword argument|must be a power of 2"
                                  r"|num_ctas > 1 not supported"),
    ("out_of_shared_memory", r"out of resource: shared memory|too much shared data|local memory \(\d+\) exceeds"
                             r"|shared memory.*exceed|exceeds? .*(shared memory|LDS)"),
    ("too_many_threads", r"out of resource: threads|flat-work-group-size|too many threads|maxntid|reqntid"),
    ("unsupported_dtype_or_op", r"input_precision must be one of|not supported|unsupported|failed to legalize"
                                r"|cannot be lowered"),
)
CI_EXTRA_CONFIGS = 3
DEFAULT_NUM_WARPS = 4
_CUOBJDUMP = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
_TENSOR_CORE = {"cuda": re.compile(r"\b(?:mma\.sync|wgmma\.mma_async|tcgen05\.mma)"),
                "hip": re.compile(r"\bv_(?:s|d)?mfma|\bv_wmma")}
_WIDE_MEMORY = {
    "cuda": re.compile(r"\b(?:ld|st)\.global(?:\.[\w:]+)*\.(?:v4\.[bfsu]32|v2\.[bfsu]64|b128)\b"
                       r"|\bcp\.async\.cg\.shared\.global(?:\.[\w:]+)*\s*\[[^\]]*\],\s*\[[^\]]*\],\s*(?:16|0x10)\b"),
    "hip": re.compile(r"\b(?:global|buffer)_(?:load|store)(?:_lds)?_(?:dwordx4|b128)\b"),
}
_AMD_FIELDS = ("vgpr_count", "sgpr_count", "agpr_count", "vgpr_spill_count", "sgpr_spill_count")
_MAX_WAVES_PER_SIMD = 8  # CDNA: 512 VGPRs per lane shared by at most 8 waves per SIMD
_SIMDS_PER_CU = 4  # CDNA ISA guides: four SIMDs per compute unit share its LDS
_ROOT = Path(__file__).resolve().parents[2]
_memo: dict[tuple, dict] = {}  # caches of pure functions of their keys, not the session's state
_refs: dict[int, tuple[KernelSpec, str]] = {}
_loaded: dict[str, Any] = {}


MODES = {"defaults": "each dtype's default config", "ci": f"the defaults and up to {CI_EXTRA_CONFIGS} other configs",
         "full": "every config for every dtype"}
DEFAULT_MODE = "defaults"


def mode() -> str:
    """The selection, from ``SUITE_COMPILE_MATRIX`` (defaults, ci or full)."""
    value = os.environ.get("SUITE_COMPILE_MATRIX", DEFAULT_MODE).strip().lower() or DEFAULT_MODE
    if value not in MODES:
        raise ValueError(f"SUITE_COMPILE_MATRIX must be 'defaults', 'ci' or 'full', got {value!r}")
    return value


def selection_line() -> str:
    """What the run's compile matrix compiled per kernel and target, and how to widen it: for the summary."""
    current, order = mode(), list(MODES)
    wider = [f"={m} {MODES[m]}" for m in order[order.index(current) + 1:]]
    return (f"compile matrix: SUITE_COMPILE_MATRIX={current}, {MODES[current]} per kernel and target"
            + (f"; {', '.join(wider)} (.ci/run runs =ci)" if wider else ""))


def family_of(target: Target) -> str:
    return "nvidia" if target[0] == "cuda" else "amd"


def classify_error(text: str) -> str:
    """The failure class of a compile or launch error message."""
    return next((name for name, pattern in _CLASS_PATTERNS if re.search(pattern, text, re.IGNORECASE)), "other")


def error_excerpt(exc: BaseException, lines: int = 4) -> str:
    """The first informative lines of an error: no echoed source, no temp-file repro command."""
    text = getattr(exc, "error_message", None) or str(exc)
    kept = [ln.strip()[:300] for ln in text.splitlines() if ln.strip() and not ln.startswith("Repro command")]
    return f"{type(exc).__name__}: " + "\n".join(kept[:lines])


def parse_cuobjdump(text: str) -> dict[str, int]:
    """reg, stack, local, shared of the first function in ``cuobjdump --dump-resource-usage`` output."""
    m = re.search(r"Function [^:\n]+:\s*\n\s*(.*)", text)
    fields = dict(re.findall(r"([A-Z]+):(\d+)", m[1])) if m else {}
    return {k.lower(): int(fields[k]) for k in ("REG", "STACK", "LOCAL", "SHARED") if k in fields}


def parse_amdgcn(asm: str) -> dict[str, int]:
    """VGPRs (arch + accumulation), SGPRs, AGPRs, spills and LLVM's waves-per-SIMD occupancy from AMDGCN assembly."""
    out = {k: int(m[1]) for k in _AMD_FIELDS if (m := re.search(rf"\.{k}:\s+(\d+)", asm))}
    if m := re.search(r"; Occupancy: (\d+)", asm):
        out["occupancy"] = int(m[1])
    return out


def nvidia_occupancy(regs: int | None, num_warps: int, shared: int, profile: Any) -> tuple[int, float] | None:
    """(resident warps per SM, fraction of the most an SM holds), limited by registers, shared memory and threads."""
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
    """(waves per SIMD, fraction of 8): LLVM's figure (else 512 // VGPRs), limited by Triton's LDS, which LLVM does
    not count (Triton allocates it dynamically)."""
    waves = amd.get("occupancy")
    if waves is None and amd.get("vgpr_count"):
        waves = min(_MAX_WAVES_PER_SIMD, (profile.vgprs_per_lane or 512) // amd["vgpr_count"])
    if waves is None:
        return None
    if shared:
        waves = min(waves, profile.shared_memory_per_block_bytes // shared * num_warps // _SIMDS_PER_CU)
    return waves, waves / _MAX_WAVES_PER_SIMD


def _attrs(signature: Mapping[str, str], backend: str, unspecialized: frozenset[str] = frozenset()) -> dict[tuple[int], list]:
    """The JIT's attributes for aligned tensors and multiples of 16, but on ``unspecialized`` (the function's
    ``do_not_specialize`` arguments: the JIT gives them none)."""
    attrs = {}
    for i, (name, ty) in enumerate(signature.items()):
        if name in unspecialized:
            continue
        if ty.startswith("*"):
            attrs[(i,)] = [["tt.divisibility", 16]] + ([["tt.pointer_range", 32]] if backend == "hip" else [])
        elif re.fullmatch(r"[iu](32|64)", ty):
            attrs[(i,)] = [["tt.divisibility", 16]]
    return attrs


def _measure(record: dict, kernel: Any, backend: str, num_warps: int, profile: Any) -> None:
    shared, limit = int(kernel.metadata.shared), profile.shared_memory_per_block_bytes
    record.update(shared_bytes=shared, shared_limit_bytes=limit, shared_fraction=round(shared / limit, 4))
    asm = kernel.asm["ptx" if backend == "cuda" else "amdgcn"]
    if backend == "cuda":
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "k.cubin").write_bytes(kernel.asm["cubin"])
            res = parse_cuobjdump(subprocess.run([str(_CUOBJDUMP), "--dump-resource-usage", str(Path(tmp) / "k.cubin")],
                                                 capture_output=True, text=True, timeout=60).stdout)
        # ptxas puts spilled registers on the stack (local memory): a stack frame means spills in Triton kernels.
        record.update(registers=res.get("reg"), stack_bytes=res.get("stack"), local_bytes=res.get("local"),
                      spills=res.get("stack", 0) + res.get("local", 0) > 0)
        occ = nvidia_occupancy(res.get("reg"), num_warps, shared, profile)
    else:
        res = parse_amdgcn(asm)
        record.update(registers=res.get("vgpr_count"), sgprs=res.get("sgpr_count"), vgpr_spills=res.get("vgpr_spill_count"),
                      sgpr_spills=res.get("sgpr_spill_count"),
                      spills=res.get("vgpr_spill_count", 0) + res.get("sgpr_spill_count", 0) > 0)
        occ = amd_occupancy(res, num_warps, shared, profile)
        record["amd_hazards"] = amdgcn_hazards.examine(asm, kernel.asm.get("ttir", ""), profile.fp8_flavour,
                                                       profile.warp_size)
    uses_dot = bool(re.search(r"\btt\.dot", kernel.asm.get("ttir", "")))
    record.update(occupancy_warps=occ[0] if occ else None, occupancy=round(occ[1], 4) if occ else None,
                  uses_dot=uses_dot, tensor_cores=bool(_TENSOR_CORE[backend].search(asm)) if uses_dot else None,
                  wide_memory_ops=len(_WIDE_MEMORY[backend].findall(asm)))


def compile_one(spec: KernelSpec, dtype: str, config: Mapping[str, Any], target: Target,
                default: bool = False, function: int = 0) -> dict[str, Any]:
    """Compile the spec's ``function``-th jitted function (``spec.jit_kernels()``: jit_fn, then jit_fns) for ``dtype``
    with ``config`` (constexprs and launch options) for ``target``: a record."""
    backend, arch, warp = target
    key = (spec.name, id(spec), function, dtype, json.dumps(dict(config), sort_keys=True, default=str), arch)
    if key not in _memo:
        with timing.phase("compile_matrix"):
            _memo[key] = _compile(spec, dtype, dict(config), target, function)
    return {**_memo[key], "config": dict(config), "default": default}


def compile_all(spec: KernelSpec, dtype: str, config: Mapping[str, Any], target: Target,
                default: bool = False) -> list[dict[str, Any]]:
    """A record per jitted function of the spec (one skipped record where it declares none)."""
    return [compile_one(spec, dtype, config, target, default, i) for i in range(max(1, len(spec.jit_kernels())))]


def _compile(spec: KernelSpec, dtype: str, config: dict, target: Target, function: int = 0) -> dict[str, Any]:
    backend, arch, warp = target
    profile = hardware_profiles.representative(arch)
    kernels = spec.jit_kernels()
    jit = kernels[function] if function < len(kernels) else None
    record: dict[str, Any] = {"kind": "compile", "kernel": spec.name, "function": jit.name if jit else None,
                              "dtype": dtype, "target": arch, "backend": backend, "family": family_of(target),
                              "profile": profile.key, "config": config, "status": "ok", "failure_class": None,
                              "error": None, "triton": triton.__version__}
    meta, options = split_config(scoped_config(config, jit.name) if jit is not None else config)
    if jit is not None and jit.options is not None:  # launched with its own options, not the config's
        options = dict(jit.options)
    record["num_warps"] = options.setdefault("num_warps", DEFAULT_NUM_WARPS)
    if jit is None:
        return {**record, "status": "skipped", "error": "not compilable offline (no jit_fn/compile_signature or jit_fns)"}
    if jit.used is not None and not jit.used(dtype, config):
        return {**record, "status": "skipped", "error": "not launched with this config"}
    if not _supports(profile, dtype):
        return {**record, "status": "skipped", "error": f"dtype unsupported on {arch} ({profile.key} profile)"}
    gpu_target = GPUTarget(backend, int(arch.removeprefix("sm_")) if backend == "cuda" else arch, warp)
    known = {f.name for f in dataclasses.fields(make_backend(gpu_target).parse_options({}))}
    if foreign := sorted(k for k in options if k not in known):  # triton.compile drops these; the launch raises
        return {**record, "status": "failed", "failure_class": "invalid_option_for_vendor",
                "error": f"KeyError at launch on {backend}: Keyword argument {foreign[0]} was specified but unrecognised"}
    fn = unwrap_jit(jit.fn)  # an @triton.autotune kernel compiles with the config's constexprs, like any other
    if not isinstance(fn, JITFunction):
        return {**record, **_in_child(spec, dtype, config, target, function)}
    signature, constexprs = jit.signature(dtype, meta)
    unspecialized = frozenset(p.name for p in fn.params if p.do_not_specialize)
    source = ASTSource(fn=fn, signature=signature, constexprs=constexprs,
                       attrs=_attrs(signature, backend, unspecialized))
    threads = options["num_warps"] * warp
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # a ptxas failure prints the whole PTX
            kernel = triton.compile(source, target=gpu_target, options=options)
    except Exception as exc:  # noqa: BLE001 - every compiler error is a finding to classify
        cls = "too_many_threads" if threads > profile.max_threads_per_block else classify_error(str(exc))
        return {**record, "status": "failed", "failure_class": cls, "error": error_excerpt(exc),
                "compile_seconds": round(time.perf_counter() - start, 3)}
    record["compile_seconds"] = round(time.perf_counter() - start, 3)
    _measure(record, kernel, backend, options["num_warps"], profile)
    # The checks a launch makes on load (CompiledKernel._init_handles), against the profile's limits.
    if threads > profile.max_threads_per_block:
        failure = ("too_many_threads", OutOfResources(threads, profile.max_threads_per_block, "threads"))
    elif record["shared_bytes"] > profile.shared_memory_per_block_bytes:
        failure = ("out_of_shared_memory", OutOfResources(record["shared_bytes"], record["shared_limit_bytes"],
                                                          "shared memory"))
    else:
        return record
    return {**record, "status": "failed", "failure_class": failure[0], "error": f"OutOfResources at launch: {failure[1]}"}


def _supports(profile: Any, dtype: str) -> bool:
    try:
        return profile.supports(dtype)
    except ValueError:  # a dtype no profile knows: nothing vouches for it
        return False


def _module_ref(spec: KernelSpec) -> str:
    """Where the child finds ``spec``: the module holding it as a global, by dotted name under kernels, else path;
    for a spec registered without a name of its own (``register(KernelSpec(...))``), the file that registered it."""
    if id(spec) not in _refs:
        for name, module in list(sys.modules.items()):
            if any(value is spec for value in list(getattr(module, "__dict__", {}).values())):
                _refs[id(spec)] = (spec, name if name.startswith("kernels.") else str(getattr(module, "__file__", name)))
                break
        else:
            where = registry.where(spec.name)
            if not (where.endswith(".py") and any(s is spec for s in registry.all_specs())):
                raise LookupError(f"kernel spec {spec.name!r} is not a global of any imported module")
            _refs[id(spec)] = (spec, str(Path(where).resolve()))
    return _refs[id(spec)][1]


def _spec_in(ref: str, name: str) -> KernelSpec:
    """The child's copy of a spec: a KernelSpec global named ``name`` of module ``ref``, else the registry's."""
    if ref not in _loaded:
        if ref.endswith(".py"):
            loader = importlib.util.spec_from_file_location(f"compile_matrix_ref{len(_loaded)}_{Path(ref).stem}", ref)
            module = importlib.util.module_from_spec(loader)
            sys.modules[loader.name] = module
            with registry.beside(Path(ref)):  # a library file beside the module imports, as in the run's process
                loader.loader.exec_module(module)
        else:
            module = importlib.import_module(ref)
        _loaded[ref] = module
    found = [v for v in vars(_loaded[ref]).values() if isinstance(v, KernelSpec) and v.name == name]
    return found[0] if found else registry.get(name)


def _in_child(spec: KernelSpec, dtype: str, config: dict, target: Target, function: int = 0) -> dict[str, Any]:
    state = stash.session()  # the compile process is kept in the session's state
    if state.compile_child is None or state.compile_child.poll() is not None:
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        env["PYTHONPATH"] = os.pathsep.join([str(_ROOT), *filter(None, [env.get("PYTHONPATH")])])
        state.compile_child = subprocess.Popen([sys.executable, "-m", "suite.tools.compile_matrix"],
                                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                               env=env, cwd=_ROOT, text=True)
        atexit.register(state.compile_child.stdin.close)
    child = state.compile_child
    request = {"module": _module_ref(spec), "kernel": spec.name, "dtype": dtype, "config": config, "target": target,
               "function": function}
    with contextlib.suppress(BrokenPipeError):
        child.stdin.write(json.dumps(request) + "\n")
        child.stdin.flush()
    line = child.stdout.readline()
    if line:
        return json.loads(line)
    # A compiler crash (LLVM abort, segfault) is a finding about this config; the next call starts a new process.
    return {"status": "failed", "failure_class": "other", "error": f"the compile process died (exit {child.wait()})"}


def _serve() -> None:
    """The child: one JSON request per stdin line, one record per stdout line; stray prints go to stderr."""
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    from suite.checks import libraries

    libraries.install()  # a kernel module's library (FlagGems) gets the run's runtime changes here too
    registry.load_builtin()
    for line in sys.stdin:
        req = json.loads(line)
        try:
            spec = _spec_in(req["module"], req["kernel"])
            record = compile_one(spec, req["dtype"], req["config"], tuple(req["target"]), function=req["function"])
        except Exception as exc:  # noqa: BLE001 - reported in the record, the process serves on
            record = {"status": "failed", "failure_class": "other", "error": f"compile process: {error_excerpt(exc)}"}
        reply.write(json.dumps(record) + "\n")
        reply.flush()


def plan(spec: KernelSpec, target: Target, selection: str | None = None) -> list[tuple[str, dict[str, Any], bool]]:
    """(dtype, config, is_default) to compile for ``target``; see the module docstring for ci and full. A default of
    {} means the launcher picks from the shape: it compiles with the signature's defaults and 4 warps."""
    selection, family = selection or mode(), family_of(target)
    default = dict(spec.default_config.get(family, {}))
    others: list[dict] = []
    for cfg in map(dict, spec.configs.get(family, ())):
        if cfg != default and cfg not in others:
            others.append(cfg)
    profile = hardware_profiles.representative(target[1])
    supported = [d for d in spec.dtypes if _supports(profile, d)]
    main = "fp16" if "fp16" in supported else supported[0] if supported else None
    jobs = [(d, default, True) for d in spec.dtypes]
    if selection == "defaults":
        return jobs
    for d in supported if selection == "full" else [main] if main else []:
        jobs += [(d, cfg, False) for cfg in (others if selection == "full" else others[:CI_EXTRA_CONFIGS])]
    return jobs


def compile_kernel(spec: KernelSpec, target: Target, selection: str | None = None) -> list[dict[str, Any]]:
    """Every jitted function of ``spec`` for each (dtype, config) of the plan."""
    return [record for d, cfg, is_default in plan(spec, target, selection)
            for record in compile_all(spec, d, cfg, target, default=is_default)]


def compile_summary_rows(records: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """Kernel x target: ok, failed by class, skipped, max registers, any spills, min occupancy."""
    table: dict[tuple[str, str], dict] = defaultdict(lambda: {"ok": 0, "failed": defaultdict(int), "skipped": 0,
                                                               "regs": [], "spills": False, "occ": []})
    for r in records:
        row = table[(r["kernel"], r["target"])]
        if r["status"] == "failed":
            row["failed"][r.get("failure_class") or "other"] += 1
        else:
            row[r["status"]] += 1
        if r.get("registers") is not None:
            row["regs"].append(r["registers"])
        row["spills"] = row["spills"] or bool(r.get("spills"))
        if r.get("occupancy") is not None:
            row["occ"].append(r["occupancy"])
    headers = ["kernel", "target", "ok", "failed", "skipped", "max regs", "spills", "min occupancy"]
    rows = [[kernel, target, row["ok"], ", ".join(f"{n} {c}" for c, n in sorted(row["failed"].items())) or "0",
             row["skipped"], max(row["regs"], default="-"), "yes" if row["spills"] else "no",
             f"{min(row['occ']):.2f}" if row["occ"] else "-"] for (kernel, target), row in sorted(table.items())]
    return headers, rows


if __name__ == "__main__":
    _serve()
