"""What changed between two runs besides their timings: the toolchain (Triton, torch, numpy, Python, the GPU runtime
and driver) and the compile matrix (per kernel x target: compiles that started or stopped failing, registers that
moved, spills that appeared or went away). Comparing a Triton upgrade on one machine is the same flow as a driver
update: a toolchain difference is what is being validated, never a reason to refuse."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from reports.loading import Run

TOOLCHAIN = ("triton", "torch", "numpy", "python", "runtime", "driver", "suite")  # "suite": the suite's own version
NOT_RECORDED = "(not recorded)"
# Registers that moved by less than this many, or this share of the base's, are not listed.
REGISTERS_MIN = 4
REGISTERS_SHARE = 0.05
SHOWN = 3  # configs named per kernel x target x change


def toolchain_changes(base: Run, cand: Run) -> list[dict[str, str]]:
    """Each toolchain component whose version differs; a key an older run file lacks reads '(not recorded)', and one
    neither file records is left out."""
    out = []
    for k in TOOLCHAIN:
        if k not in base.env and k not in cand.env:
            continue
        b, c = base.env.get(k, NOT_RECORDED), cand.env.get(k, NOT_RECORDED)
        if b != c:
            out.append({"name": k, "base": str(b), "candidate": str(c)})
    return out


def toolchain_line(changes: list[dict[str, str]]) -> str:
    if not changes:
        return "Toolchain: unchanged (" + ", ".join(TOOLCHAIN) + " as far as both runs record them)."
    return "Toolchain changed: " + ", ".join(f"{c['name']} {c['base']} -> {c['candidate']}" for c in changes) + "."


def _compile_key(r: dict[str, Any]) -> tuple:
    return (r["kernel"], r.get("function"), r["dtype"], r["target"], json.dumps(r.get("config"), sort_keys=True))


def _config_text(r: dict[str, Any]) -> str:
    function = f"{r['function']} " if r.get("function") else ""
    return f"{function}{r['dtype']} {json.dumps(r.get('config') or {}, sort_keys=True)}"


def _registers(r: dict[str, Any]) -> int | None:
    v = r.get("registers")
    return v if type(v) is int else None


def compile_changes(base: Run, cand: Run) -> tuple[list[dict[str, Any]], int]:
    """(rows per kernel x target x kind of change, compiles compared). Kinds: 'compile failed' (a regression: it
    compiled in the base run), 'compiles now', 'registers', 'spills appeared', 'spills gone'."""
    b_recs = {_compile_key(r): r for r in base.data.get("compiles") or []}
    found: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    compared = 0
    for r in cand.data.get("compiles") or []:
        b = b_recs.get(_compile_key(r))
        if b is None or "skipped" in (b["status"], r["status"]):
            continue
        compared += 1
        where, what = (r["kernel"], r["target"]), _config_text(r)
        if b["status"] == "ok" and r["status"] == "failed":
            found[(*where, "compile failed")].append(f"{what}: {r.get('failure_class') or 'failed'}")
        elif b["status"] == "failed" and r["status"] == "ok":
            found[(*where, "compiles now")].append(f"{what}: was {b.get('failure_class') or 'failed'}")
        if b["status"] != "ok" or r["status"] != "ok":
            continue
        rb, rc = _registers(b), _registers(r)
        if rb is not None and rc is not None and abs(rc - rb) >= max(REGISTERS_MIN, REGISTERS_SHARE * rb):
            found[(*where, "registers")].append(f"{what}: {rb} -> {rc} ({rc - rb:+d})")
        if b.get("spills") is not None and r.get("spills") is not None and bool(b["spills"]) != bool(r["spills"]):
            found[(*where, "spills appeared" if r["spills"] else "spills gone")].append(what)
    rows = [{"kernel": k, "target": t, "change": kind, "configs": len(items),
             "detail": "; ".join(items[:SHOWN]) + (f"; and {len(items) - SHOWN} more" if len(items) > SHOWN else "")}
            for (k, t, kind), items in sorted(found.items())]
    return rows, compared


def module_key(record: dict[str, Any]) -> str:
    """A --kernel-module the same in both runs: a dotted name as given, a file by its name (runs on two machines
    give it from different directories)."""
    module = record["module"]
    return module.replace("\\", "/").rsplit("/", 1)[-1] if module.endswith(".py") else module


def _library_change(module: str, b: dict[str, Any] | None, c: dict[str, Any] | None) -> str | None:
    """'distribution torchao 0.18.0 -> 0.19.0', '... path A -> B', or one imported in one run only; None if alike."""
    lib = c or b
    what = f"distribution {lib['distribution']}" if lib["distribution"] else f"module {lib['module']} (no distribution)"
    if b is None or c is None:
        version = f" {lib['version']}" if lib["version"] else ""
        return f"{what}{version} imported by {module} in the {'candidate' if b is None else 'base'} run only"
    moved = []
    if (b["distribution"], b["version"]) != (c["distribution"], c["version"]):
        before = " ".join(x for x in (b["distribution"] if b["distribution"] != c["distribution"] else None,
                                      b["version"]) if x) or "(no distribution)"
        moved.append(f"{before} -> {c['version'] or '(no version)'}")
    if b["path"] != c["path"]:
        moved.append(f"path {b['path']} -> {c['path']}")
    return f"{what} " + ", ".join(moved) + f" (imported by {module})" if moved else None


def code_changes(base: Run, cand: Run) -> list[str]:
    """How the code the two runs tested differs (the run file's kernel_modules: each --kernel-module's sha256 and the
    libraries it imported): 'kernel module X changed: sha256 a -> b', 'distribution torchao 0.18.0 -> 0.19.0'. Empty
    where they agree, or where neither run records it (older run files)."""
    b_mods, c_mods = base.data.get("kernel_modules"), cand.data.get("kernel_modules")
    if not b_mods and not c_mods:
        return []
    b_by, c_by = {module_key(m): m for m in b_mods or []}, {module_key(m): m for m in c_mods or []}
    out = []
    for key in sorted(b_by.keys() | c_by.keys()):
        b, c = b_by.get(key), c_by.get(key)
        if b is None or c is None:
            recorded = "candidate" if b is None else "base"
            other = base if b is None else cand
            why = "" if "kernel_modules" in other.data else " (the other run file does not record its kernel modules)"
            out.append(f"kernel module {key} in the {recorded} run only{why}")
            continue
        if b["sha256"] != c["sha256"]:
            out.append(f"kernel module {key} changed: sha256 {(b['sha256'] or '?')[:12]} -> {(c['sha256'] or '?')[:12]}")
        b_libs, c_libs = ({lib["module"]: lib for lib in m["libraries"]} for m in (b, c))
        out += [line for name in sorted(b_libs.keys() | c_libs.keys())
                if (line := _library_change(key, b_libs.get(name), c_libs.get(name)))]
    return out
