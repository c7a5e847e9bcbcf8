"""Portability lints over kernel config spaces, compile records and jitted functions' source: pure functions,
nothing compiled or run here.

A finding is a JSON-able dict in the run file's "findings" shape (kernel, dtype, backend, arch, property, claimed,
holds, cases_checked, message, repro; property is "lint:<rule>", holds is False) plus kind "lint", rule, severity
("error" fails the suite, "warning" is recorded), family, target and the config at fault where there is one.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import hardware_profiles
from kernels.spec import VENDOR_ONLY_OPTIONS, split_config
from suite.checks import semantic_gaps

FAMILIES = ("nvidia", "amd")


def _finding(rule: str, severity: str, kernel: str, message: str, family: str, target: str | None = None,
             dtype: str = "*", **extra: Any) -> dict[str, Any]:
    return {"kernel": kernel, "dtype": dtype, "backend": "cuda" if family == "nvidia" else "rocm", "arch": target or "*",
            "property": f"lint:{rule}", "claimed": severity == "error", "holds": False, "cases_checked": 0,
            "message": message, "repro": None, "kind": "lint", "rule": rule, "severity": severity, "family": family,
            "target": target, **extra}


def max_warps(family: str, profiles: Iterable[Any] | None = None) -> int:
    """The most warps a block may have on every target of ``family`` (16 on CDNA's 64-wide wavefronts, 32 on NVIDIA)."""
    profiles = list(profiles) if profiles is not None else [hardware_profiles.representative(a)
                                                             for a in hardware_profiles.REPRESENTATIVES]
    return min(p.max_threads_per_block // p.warp_size for p in profiles if p.family == family)


def lint_config_space(kernel: str, default_config: Mapping[str, Mapping[str, Any]],
                      configs: Mapping[str, Sequence[Mapping[str, Any]]],
                      warp_limits: Mapping[str, int] | None = None) -> list[dict[str, Any]]:
    """Errors: the other vendor's launch options in a family's configs; more warps than the family's blocks hold."""
    limits = dict(warp_limits) if warp_limits is not None else {f: max_warps(f) for f in FAMILIES}
    findings = []
    for family in FAMILIES:
        other = FAMILIES[1 - FAMILIES.index(family)]
        candidates = [default_config.get(family, {}), *configs.get(family, ())]
        seen: list[dict] = []
        for cfg in map(dict, candidates):
            if cfg in seen:
                continue
            seen.append(cfg)
            _, options = split_config(cfg)
            for option in sorted(set(options) & set(VENDOR_ONLY_OPTIONS[other])):
                findings.append(_finding(
                    "vendor_option_leak", "error", kernel, f"{family} config sets {option}, an {other}-only option: "
                    f"Triton's {family} backend raises 'Keyword argument {option} was specified but unrecognised' "
                    "at launch", family, config=cfg))
            warps = options.get("num_warps")
            if warps is not None and warps > limits[family]:
                findings.append(_finding(
                    "too_many_warps", "error", kernel, f"{family} config has num_warps={warps}: more than the "
                    f"{limits[family]} warps a block may have on {family} targets", family, config=cfg))
    return findings


def lint_dtypes(kernel: str, dtypes: Sequence[str], profiles: Iterable[Any]) -> list[dict[str, Any]]:
    """Warnings: an fp8 dtype declared for a target whose profile lacks that flavour (fp8e4nv on gfx942 ...)."""
    findings = []
    for profile in profiles:
        for dtype in (d for d in dtypes if d.startswith("fp8") and not profile.supports(d)):
            has = f"only {profile.fp8_flavour.upper()} fp8 ({', '.join(profile.fp8_dtypes())})" if profile.fp8_flavour \
                else "no fp8"
            findings.append(_finding(
                "fp8_flavour_unsupported", "warning", kernel, f"declares {dtype}, but {profile.arch} "
                f"({profile.key}) has {has}: its cases are skipped there and a scale computed for another flavour "
                "would be silently wrong", profile.family, profile.arch, dtype))
    return findings


def lint_semantic_gaps(kernel: str, fns: Iterable[Any]) -> list[dict[str, Any]]:
    """Warnings: Python ``and``/``or``/``not`` or a chained comparison on block tensors in a jitted function (or one it
    calls), which Triton's CPU interpreter evaluates as Python does and compiled Triton elementwise
    (suite/checks/semantic_gaps.py): read from the source, nothing run. One finding per construct and line, naming the
    construct, function, file and line."""
    findings, seen = [], set()
    for fn in fns:
        for gap in semantic_gaps.find(fn):
            if (gap.file, gap.line, gap.construct) in seen:
                continue
            seen.add((gap.file, gap.line, gap.construct))
            findings.append({
                "kernel": kernel, "dtype": "*", "backend": "interpret", "arch": "*",
                "property": "lint:interpreter_semantic_gap", "claimed": False, "holds": False, "cases_checked": 0,
                "message": f"{gap.describe()}: `{gap.source}`: {semantic_gaps.COMPILED[gap.construct]}; Triton's "
                           f"CPU interpreter evaluates it as Python does (a block tensor is always true), so a case "
                           f"that launches it is not checkable there (docs/checks.md)",
                "repro": None, "kind": "lint", "rule": "interpreter_semantic_gap", "severity": "warning",
                "family": None, "target": "interpreter", "construct": gap.construct, "function": gap.function,
                "file": gap.where().rsplit(":", 1)[0], "line": gap.line})
    return findings


def lint_spec(spec: Any) -> list[dict[str, Any]]:
    """Config-space, dtype and interpreter-semantics lints of a registered kernel spec against the compile-matrix
    targets."""
    profiles = [hardware_profiles.representative(arch) for _, arch, _ in hardware_profiles.targets()]
    return (lint_config_space(spec.name, spec.default_config, spec.configs)
            + lint_dtypes(spec.name, spec.dtypes, profiles)
            + lint_semantic_gaps(spec.name, [k.fn for k in spec.jit_kernels()]))


def lint_compile_records(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Warnings: the same constexpr config (kernel, dtype) fits one vendor's shared memory and overflows the other's."""
    groups: dict[tuple, list[Mapping]] = defaultdict(list)
    for r in records:
        if r.get("status") == "skipped" or "config" not in r:
            continue
        meta, _ = split_config(r["config"])
        groups[(r["kernel"], r["dtype"], json.dumps(meta, sort_keys=True))].append(r)
    findings = []
    for (kernel, dtype, meta), group in sorted(groups.items()):
        fits = [r for r in group if r["status"] == "ok"]
        overflows = [r for r in group if r.get("failure_class") == "out_of_shared_memory"]
        for bad in overflows:
            good = [r for r in fits if r.get("family") != bad.get("family")]
            if not good:
                continue
            best = max(good, key=lambda r: r.get("shared_bytes") or 0)
            findings.append(_finding(
                "shared_memory_divergence", "warning", kernel,
                f"{dtype} config {meta} fits {best['target']} ({best.get('shared_bytes')} of "
                f"{best.get('shared_limit_bytes')} bytes with {_options(best)}) but overflows {bad['target']} "
                f"({bad.get('shared_bytes')} > {bad.get('shared_limit_bytes')} bytes with {_options(bad)})",
                bad.get("family", "amd"), bad["target"], dtype, fits_on=sorted({r["target"] for r in good}),
                config=bad["config"]))
    return findings


def _options(record: Mapping[str, Any]) -> str:
    _, options = split_config(record["config"])
    return ", ".join(f"{k}={v}" for k, v in sorted(options.items())) or "default options"


_ISSUE_947 = ("ROCm/triton #947 reports tl.associative_scan (cumsum, logcumsumexp) over an axis longer than one "
              "wavefront returning wrong values for about 3% of elements on gfx942, a regression in the scan's "
              "lowering (ScanOpToLLVM.cpp) of one ROCm/triton build that reference Triton did not have; run it on an "
              "AMD GPU with rows longer than 64")
_TRANSCENDENTAL_OPS = {  # what Triton 3.6 emits the bare instruction for, and what the scaled sequence avoids
    "v_exp_f32": ("tl.exp2 (llvm.amdgcn.exp2)", "results below 2^-126 (inputs below -126) are not produced as "
                  "subnormals, which NVIDIA returns; tl.exp scales around them"),
    "v_log_f32": ("llvm.amdgcn.log", "subnormal inputs are not handled; tl.log and tl.log2 scale them by 2^32 first"),
    "v_sqrt_f32": ("tl.sqrt (llvm.amdgcn.sqrt)", "subnormal inputs are not handled; ROCm's ocml sqrt scales them by "
                   "2^32 first"),
    "v_rsq_f32": ("tl.math.rsqrt or tl.math.sqrt_rn (llvm.amdgcn.rsq)", "subnormal inputs are not handled; ROCm's "
                  "ocml rsqrt scales them by 2^24 first"),
    "v_rcp_f32": ("llvm.amdgcn.rcp", "subnormal inputs are not handled; x / y and 1 / x scale them with "
                  "v_div_scale_f32"),
}


def _where(item: Mapping[str, Any]) -> str:
    if not item.get("line"):
        return "source line unknown (no debug line)"
    text = f": `{item['source']}`" if item.get("source") else ""
    return f"{Path(item['file']).name}:{item['line']}{text}"


def _amd_messages(record: Mapping[str, Any]) -> Iterable[tuple[str, tuple, str, dict[str, Any]]]:
    """(rule, identity, message, extra fields) of each hazard an AMD compile record carries."""
    hazards = record.get("amd_hazards") or {}
    for t in hazards.get("bare_transcendentals", ()):
        yield ("amd_bare_transcendental", (t["instruction"], t.get("file"), t.get("line")),
               f"{t['instruction']} x{t['count']} with no subnormal scaling around it ({_where(t)}; emitted for "
               f"{_TRANSCENDENTAL_OPS[t['instruction']][0]}): {_TRANSCENDENTAL_OPS[t['instruction']][1]} (LLVM "
               f"AMDGPUUsage: the float instruction does not natively support denormals); what a GPU returns, the "
               f"subnormal value class shows (docs/hazards.md, 25)",
               {"instruction": t["instruction"], "file": t.get("file"), "line": t.get("line")})
    for f in hazards.get("fp8_software", ()):
        has = f"only {f['target_flavour'].upper()} fp8" if f["target_flavour"] else "no fp8 instructions"
        yield ("amd_fp8_software_conversion", (f["type"],),
               f"{f['conversions']} conversion(s) to or from {f['type']} ({f['flavour'].upper()}), but "
               f"{record['target']} has {has}: converted with byte shifts and masks ({f['byte_operations']} in the "
               f"kernel; {f['hardware_conversions']} v_cvt fp8/bf8 instructions, none for {f['type']}), slower and "
               f"with its own rounding and saturation", {"fp8_type": f["type"]})
    for s in hazards.get("long_scans", ()):
        yield ("amd_scan_past_wavefront", (s["axis"], s["length"], s.get("file"), s.get("line")),
               f"tt.scan over axis {s['axis']} of length {s['length']} (shape {s['shape']}), longer than the "
               f"{s['lanes']}-lane wavefront ({_where(s)}): {_ISSUE_947}", {"scan_axis": s["axis"],
                                                                            "scan_length": s["length"],
                                                                            "file": s.get("file"), "line": s.get("line")})


def lint_amd_hazards(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Warnings from compile records of AMD targets (suite/checks/amdgcn_hazards.py): bare transcendental
    instructions, fp8 converted in software for a flavour the target lacks, scans longer than a wavefront. One per
    kernel, function, dtype, target and hazard, naming the first config that showed it and how many did."""
    found: dict[tuple, dict[str, Any]] = {}
    for r in records:
        if r.get("status") != "ok" or r.get("family") != "amd":
            continue
        for rule, identity, message, extra in _amd_messages(r):
            key = (rule, r["kernel"], r.get("function"), r["dtype"], r["target"], identity)
            if key in found:
                found[key]["configs_seen"] += 1
                continue
            function = f" ({r['function']})" if r.get("function") else ""
            found[key] = _finding(rule, "warning", r["kernel"], f"{r['kernel']}{function}[{r['dtype']}] on "
                                  f"{r['target']}: {message}", "amd", r["target"], r["dtype"],
                                  function=r.get("function"), config=r.get("config"), configs_seen=1, **extra)
    return list(found.values())
