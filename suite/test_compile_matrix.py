"""The compile matrix in the suite: every registered kernel compiled for every target, on any backend.

``test_compiles_on_target[<kernel>-<arch>]`` compiles the kernel's configs for that target (see
``suite/tools/compile_matrix.py``; ``SUITE_COMPILE_MATRIX=full`` compiles every config and dtype, the default ``ci`` a
subset) and hands the records to the run file's "compiles", and the hazards read from AMD targets' assembly
(``lints.lint_amd_hazards``: bare transcendentals, fp8 converted in software, scans past a wavefront) to its
"findings" as warnings. It fails when a default config (what users run) fails to
compile or to fit the target; other configs that fail are findings in the records, not test failures.
``test_portability_lints[<kernel>]`` fails on lint errors (``suite/checks/lints.py``: a vendor-only option in the other
vendor's configs, more warps than a block holds) and hands warnings to the run file's "findings" (a construct the
interpreter evaluates differently is also given as a pytest warning, naming its function, file and line).
"""

from __future__ import annotations

import json
import os
import shlex
import warnings

import pytest

import hardware_profiles
from kernels import registry
from kernels.spec import split_config
from suite.checks import lints
from suite.session import options
from suite.tools import compile_matrix, loaded_registers

COMPILES = "suite_compile_records"
FINDINGS = "suite_finding_records"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    from suite.plugin.context import CONTEXT

    ctx = metafunc.config.stash.get(CONTEXT, None)
    specs = [s for s in registry.all_specs() if ctx is None or ctx.options.selects(s.name)]
    if "kernel_target" in metafunc.fixturenames:
        metafunc.parametrize("kernel_target", [pytest.param((s, t), id=f"{s.name}-{t[1]}") for s in specs
                                               for t in matrix_targets(ctx)])
    elif "kernel_spec" in metafunc.fixturenames:
        metafunc.parametrize("kernel_spec", [pytest.param(s, id=s.name) for s in specs])


def matrix_targets(ctx) -> list[tuple[str, str, int]]:
    """Every profiled target, or with ``--compile-targets=own`` (a GPU runner's default) the runner's own arch: what
    the matrix adds on a GPU is its own arch's offline records, checked against the loaded kernel; compiling for the
    other five archs there repeats the CPU CI's work."""
    every = hardware_profiles.targets()
    if ctx is None or ctx.options.compile_targets_for(ctx.backend.name) == "all":
        return every
    backend = ctx.backend
    own = [t for t in every if t[1] == backend.arch]
    if own or backend.name == "interpret":
        return own
    return [("cuda" if backend.family == "nvidia" else "hip", backend.arch, backend.warp_size)]  # no profile yet


def _repro(request: pytest.FixtureRequest, env: str = "") -> str:
    """Started as the run was (options.repro_prefix: ``.venv/bin/triton-portability`` where that started it)."""
    launcher = shlex.split(os.environ.get(options.LAUNCHER_ENV, "")) or ["pytest"]
    parts = [*launcher, request.node.nodeid,
             *(f"--kernel-module={m}" for m in request.config.getoption("--kernel-module"))]
    return f"reproduce with: {env}" + " ".join(shlex.quote(p) for p in parts)


def _describe(record: dict) -> str:
    function = f" ({record['function']})" if record.get("function") else ""
    return (f"{record['kernel']}{function}[{record['dtype']}] on {record['target']} config {record['config']}: "
            f"{record['failure_class']}: {record['error']}")


def test_compiles_on_target(kernel_target, request: pytest.FixtureRequest) -> None:
    """Every default config of the target's vendor family compiles and fits the target's limits."""
    spec, target = kernel_target
    records = compile_matrix.compile_kernel(spec, target)
    request.node.user_properties.append((COMPILES, records))
    hazards = lints.lint_amd_hazards(records)  # warnings read from the AMDGCN and TTIR (docs/checks.md)
    for finding in hazards:
        finding["repro"] = _repro(request, f"SUITE_COMPILE_MATRIX={compile_matrix.mode()} ").removeprefix(
            "reproduce with: ")
    if hazards:
        request.node.user_properties.append((FINDINGS, hazards))
    if not spec.jit_kernels():
        pytest.skip(f"{spec.name}: not compilable offline (the spec has no jit_fn/compile_signature or jit_fns)")
    if all(r["status"] == "skipped" for r in records):
        pytest.skip(f"{spec.name}: no declared dtype ({', '.join(spec.dtypes)}) is supported on {target[1]}")
    broken = [r for r in records if r["default"] and r["status"] == "failed"]
    if broken:
        pytest.fail("default config fails on the target:\n" + "\n".join(map(_describe, broken)) + "\n"
                    + _repro(request, f"SUITE_COMPILE_MATRIX={compile_matrix.mode()} "), pytrace=False)


def test_portability_lints(kernel_spec, request: pytest.FixtureRequest) -> None:
    """Lint errors fail: a family's configs carrying the other vendor's launch options, or more warps than its blocks
    hold. Warnings are recorded: fp8 flavours a target lacks, and constexpr configs both families declare that fit
    one vendor's shared memory and overflow the other's (compiled on every target; mostly Triton cache hits)."""
    findings = lints.lint_spec(kernel_spec)
    metas = {family: {_meta(c) for c in [kernel_spec.default_config.get(family, {}), *kernel_spec.configs.get(family, ())]}
             for family in lints.FAMILIES}
    from suite.plugin.context import CONTEXT

    records = [record for target in matrix_targets(request.config.stash.get(CONTEXT, None))
               for dtype, cfg, default in compile_matrix.plan(kernel_spec, target)
               if _meta(cfg) in metas["nvidia"] & metas["amd"]
               for record in compile_matrix.compile_all(kernel_spec, dtype, cfg, target, default)]
    findings += lints.lint_compile_records(records)
    repro = _repro(request)
    for finding in findings:
        finding["repro"] = repro.removeprefix("reproduce with: ")
    request.node.user_properties.append((FINDINGS, findings))
    for f in findings:
        if f["rule"] == "interpreter_semantic_gap":  # the construct, function, file and line, in pytest's warnings
            warnings.warn(f"{f['kernel']}: {f['message']}", UserWarning, stacklevel=1)
    errors = [f for f in findings if f["severity"] == "error"]
    if errors:
        pytest.fail("\n".join(f"{f['rule']}: {f['kernel']} {f.get('config')}: {f['message']}" for f in errors)
                    + "\n" + repro, pytrace=False)


def _meta(config: dict) -> str:
    return json.dumps(split_config(config)[0], sort_keys=True)


# Launches whose JIT specialization matches the matrix's offline assumptions (sizes and
# strides multiples of 16, contiguous rows, the same meta-parameters and warps), in fp16 unless named.
LOADED_CHECKS = {
    "vector_add": ({"N": 1 << 20}, {"BLOCK_SIZE": 1024, "num_warps": 4}),
    "softmax": ({"M": 64, "N": 1024}, {"BLOCK_SIZE": 1024, "num_warps": 4}),
    "layernorm": ({"M": 64, "N": 1024}, {"BLOCK_SIZE": 1024, "num_warps": 4}),
    "matmul": ({"M": 512, "N": 512, "K": 512},
               {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}),
    # Its signature once lacked the unit strides: offline, every config spilled at 255 registers.
    "fp8_scaled_matmul": ({"M": 512, "N": 512, "K": 512},
                          {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 8,
                           "num_stages": 3}, "fp8e4nv"),
}


@pytest.mark.kernels()  # the kernel parameter names it
@pytest.mark.parametrize("kernel", sorted(LOADED_CHECKS))
def test_offline_registers_match_the_loaded_kernel(kernel: str, request: pytest.FixtureRequest) -> None:
    """On an NVIDIA GPU: the registers, spills and shared memory that the matrix records
    offline for this arch equal what the driver reports for the kernel the suite launches."""
    from suite.plugin.context import BACKEND

    backend = request.config.stash[BACKEND]
    if backend.name != "cuda":
        pytest.skip("needs an NVIDIA GPU to load the kernel (n_regs/n_spills exist only after loading)")
    shape, config, dtype = (*LOADED_CHECKS[kernel], "fp16")[:3]
    spec = registry.get(kernel)
    offline = compile_matrix.compile_one(spec, dtype, config, ("cuda", backend.arch, 32))
    if offline["status"] == "skipped":  # e.g. fp8 before sm_89
        pytest.skip(f"{kernel} {dtype} on {backend.arch}: {offline['error']}")
    loaded = loaded_registers.loaded(spec, dtype, shape, config, backend)
    finding = {"kernel": kernel, "dtype": dtype, "backend": backend.name, "arch": backend.arch,
               "property": "offline_registers_match_loaded", "claimed": True, "cases_checked": 1,
               "message": json.dumps({"offline": {k: offline.get(k) for k in ("registers", "spills", "shared_bytes")},
                                      "loaded": loaded["variants"]}), "repro": None}
    assert loaded["passed"] and len(loaded["variants"]) == 1, loaded
    variant = loaded["variants"][0]
    finding["holds"] = (variant["n_regs"] == offline["registers"] and (variant["n_spills"] > 0) == offline["spills"]
                        and variant["shared"] == offline["shared_bytes"])
    request.node.user_properties.append((FINDINGS, [finding]))
    assert finding["holds"], finding["message"]
