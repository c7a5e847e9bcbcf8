"""What a candidate run checked less than its base, for ``compare``: a candidate that passes what it checked, having
checked less, is not "no regressions". Compared: the memory check (its mode, and each kernel the base's checker
saw), the Hypothesis profile (its examples per test), the autotune configs each kernel x dtype ran, and the kernel x
dtype pairs that ran. The profile and the kernel x dtype pairs may differ under --allow-different-tests (a run of
fewer tests, asked for): then they are said first in the verdict, not failed; the memory check and the configs never
are."""

from __future__ import annotations

from typing import Any

from reports.loading import Run
from reports.outcomes import RAN, kernel_dtype_of

RULE = ("The candidate checked less than the base where its memory check was off (or missed a kernel the base's "
        "checked), its Hypothesis profile draws fewer examples, a kernel x dtype ran fewer of its autotune configs, or "
        "a kernel x dtype the base ran did not run: a regression (the profile and the kernel x dtype pairs: said first, "
        "not failed, under --allow-different-tests).")
# Examples per test of the suite's profiles (suite/checks/strategies.py PROFILES): reports import no suite code.
EXAMPLES = {"dev": 10, "ci": 20, "validation": 40, "nightly": 200}
SHOWN = 4


def _row(what: str, base: str, cand: str, allowed: bool = False) -> dict[str, Any]:
    return {"what": what, "base": base, "candidate": cand, "allowed": allowed}


def text(row: dict[str, Any]) -> str:
    return f"{row['what']}: {row['base']} -> {row['candidate']}"


def _memcheck(run: Run) -> tuple[str, set[str]]:
    mem = run.data.get("memcheck")
    if not isinstance(mem, dict):
        return "not recorded", set()
    mode = str(mem.get("mode") or "off")
    return mode, set(mem.get("kernels") or {}) - set(mem.get("unchecked") or {})


def _configs(run: Run) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rec in run.data.get("coverage") or []:
        if isinstance(rec, dict) and isinstance(rec.get("configs"), dict):
            ran = {c for c, n in rec["configs"].items() if n}
            out.setdefault((str(rec.get("kernel")), str(rec.get("dtype"))), set()).update(ran)
    return out


def _pairs(run: Run) -> set[tuple[str, str]]:
    return {kd for t in run.data["tests"] if t["outcome"] in RAN and (kd := kernel_dtype_of(t["nodeid"]))}


def _few(items: list[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def _repro(run: Run) -> str | None:
    """The single case a run was asked to run (--repro), from its command line; None for a run of the drawn cases."""
    args = [str(a) for a in run.data.get("command") or []]
    for i, a in enumerate(args):
        if a.startswith("--repro="):
            return a.split("=", 1)[1]
        if a == "--repro" and i + 1 < len(args):
            return args[i + 1]
    return None


def switch_rows(base: Run, cand: Run, allow_tests: bool = False) -> list[dict[str, Any]]:
    """What the candidate run as a whole checked less than the base: the memory check turned off, a Hypothesis profile
    of fewer examples, a single --repro case instead of the drawn ones."""
    rows = []
    b_mode, c_mode = _memcheck(base)[0], _memcheck(cand)[0]
    if b_mode not in ("off", "not recorded") and c_mode in ("off", "not recorded"):
        rows.append(_row("memory check", b_mode, f"{c_mode} (--no-memcheck, or no --memcheck on a GPU)"))
    b_prof, c_prof = (str(r.env.get("hypothesis_profile")) for r in (base, cand))
    if b_prof != c_prof:
        b_n, c_n = EXAMPLES.get(b_prof), EXAMPLES.get(c_prof)
        if b_n is None or c_n is None or c_n < b_n:
            rows.append(_row("Hypothesis profile", f"{b_prof} ({b_n or '?'} examples a test)",
                             f"{c_prof} ({c_n or '?'} examples a test)", allow_tests))
    b_one, c_one = _repro(base), _repro(cand)
    if c_one is not None and b_one is None:
        rows.append(_row("cases", "drawn by the profile", f"one case (--repro={c_one})", allow_tests))
    return rows


def switched_off(base: Run, cand: Run) -> list[str]:
    """switch_rows as text: what ``cand`` checked less than ``base`` over the whole run (reports/current.py: a newer
    run that did supersedes nothing of the older)."""
    return [text(r) for r in switch_rows(base, cand)]


def checked_less(base: Run, cand: Run, allow_tests: bool = False) -> list[dict[str, Any]]:
    rows = switch_rows(base, cand, allow_tests)
    (b_mode, b_kernels), (c_mode, c_kernels) = _memcheck(base), _memcheck(cand)
    if b_mode not in ("off", "not recorded") and c_mode not in ("off", "not recorded"):
        pairs = _pairs(cand)
        lost = sorted(k for k in b_kernels - c_kernels if any(p[0] == k for p in pairs))
        if lost:
            rows.append(_row("memory check", f"{b_mode}: saw {len(b_kernels)} kernel(s)",
                             f"no launch of {_few(lost)} seen"))
    b_cfg, c_cfg = _configs(base), _configs(cand)
    for key in sorted(b_cfg.keys() & c_cfg.keys()):
        if lost := sorted(b_cfg[key] - c_cfg[key]):
            rows.append(_row(f"autotune configs of {key[0]} {key[1]}", f"{len(b_cfg[key])} ran",
                             f"{len(c_cfg[key] & b_cfg[key])} of them ran; never: {_few(lost)}"))
    if lost_pairs := sorted(_pairs(base) - _pairs(cand)):
        rows.append(_row("kernel x dtype", f"{len(_pairs(base))} ran",
                         f"{len(lost_pairs)} did not run: {_few([' '.join(p) for p in lost_pairs])}", allow_tests))
    return rows
