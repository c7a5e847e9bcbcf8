"""What a candidate run checked less than its base, for ``compare``: a candidate that passes what it checked, having
checked less, is not "no regressions". Compared: the memory check (its mode, and each kernel the base's checker
saw), the race check, the Hypothesis profile (its examples per test), a single --repro case, the intermittent
reruns (where the candidate had a wrong case to run again), the compile matrix (what the base compiled per kernel
and target), the configs each kernel x dtype ran, and the kernel x dtype pairs that ran. Every switch the suite has
that turns a check off or down is in the run file (``checks``, suite/plugin/hooks.py checks_record; the memory
check's mode in ``memcheck``, the profile in the environment). A base that records no state of a check (a run file
from before it was recorded) is compared with the suite's default, and the row says "not recorded"; a candidate that
records none is checked less ("not recorded"), never a silent pass. The profile, the --repro case, the kernel x dtype
pairs and the compiles of kernels the candidate never compiled may differ under --allow-different-tests (a run of
fewer tests, asked for): then they are said in the verdict, not failed; the rest never are."""

from __future__ import annotations

import json
from typing import Any

from reports.loading import Run
from reports.outcomes import RAN, REFERENCE_TEST, kernel_dtype_of, test_function

RULE = ("The candidate checked less than the base where its memory check or its race check was off (or its memory "
        "check missed a kernel the base's checked), its Hypothesis profile draws fewer examples, it ran one --repro case, "
        "it ran a wrong case again fewer times to tell an intermittent failure, it compiled less of the compile matrix, "
        "a kernel x dtype ran fewer configs, or a kernel x dtype the base ran did not run: a regression (the profile, "
        "--repro, the kernel x dtype pairs and the compiles of kernels it never compiled: said, not failed, under "
        "--allow-different-tests). A base that records no state of a check is compared with the suite's default "
        "(\"not recorded\"); a candidate that records none checked less. A test that passed in the base and fails "
        "now stopped at its failure: its configs and launches are not said again here.")
# The suite's defaults of its check switches (suite/session/options.py, suite/checks/memcheck.py,
# suite/tools/compile_matrix.py): what a base that records none is taken to have run with.
DEFAULTS = {"races": "on", "intermittent_runs": 20, "compile_matrix": "defaults"}
NOT_RECORDED = "not recorded"
SWITCHES = "race check, intermittent reruns, compile matrix, --compile-targets, --config, --repro"
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


def _passed(run: Run, function: str | None = None) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(the kernel x dtype pairs with a test of ``function`` (any test: None) in the run, those of them whose every
    such test passed): a test that failed stopped at its first failure, having run fewer configs and launches by
    nature; where it passed in the base, its failure is what broke, not a check left out."""
    seen: dict[tuple[str, str], bool] = {}
    for t in run.data["tests"]:
        kd = kernel_dtype_of(t["nodeid"])
        if kd and (function is None or test_function(t["nodeid"]) == function):
            seen[kd] = seen.get(kd, True) and t["outcome"] == "passed"
    return set(seen), {kd for kd, ok in seen.items() if ok}


def _pairs(run: Run) -> set[tuple[str, str]]:
    return {kd for t in run.data["tests"] if t["outcome"] in RAN and (kd := kernel_dtype_of(t["nodeid"]))}


def _few(items: list[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def _repro(run: Run) -> str | None:
    """The single case a run was asked to run (--repro): recorded, else from its command line (an older run file);
    None for a run of the drawn cases."""
    found = run.data.get("checks")
    if isinstance(found, dict):
        return found.get("repro")
    args = [str(a) for a in run.data.get("command") or []]
    for i, a in enumerate(args):
        if a.startswith("--repro="):
            return a.split("=", 1)[1]
        if a == "--repro" and i + 1 < len(args):
            return args[i + 1]
    return None


def checks(run: Run) -> dict[str, Any] | None:
    """The run's recorded check states (suite/plugin/hooks.py checks_record), None where its file records none."""
    found = run.data.get("checks")
    return found if isinstance(found, dict) else None


def _said(value: Any, recorded: bool, default: Any) -> str:
    return str(value) if recorded else f"{NOT_RECORDED} (the suite's default: {default})"


def _reran(run: Run) -> bool:
    """Whether the run had a wrong case or a property that failed, which it ran again to tell an intermittent one."""
    return any(c["outcome"] in ("failed", "xfailed") for c in run.data["cases"]) or \
        any(f.get("claimed") and f.get("holds") is False for f in run.data["findings"])


def switch_rows(base: Run, cand: Run, allow_tests: bool = False) -> list[dict[str, Any]]:
    """What the candidate run as a whole checked less than the base: the memory check or the race check turned off, a
    Hypothesis profile of fewer examples, a single --repro case instead of the drawn ones, fewer reruns of a wrong
    case (where the candidate had one), and its check states not recorded where the base's are."""
    rows = []
    b_mode, c_mode = _memcheck(base)[0], _memcheck(cand)[0]
    memory_off = b_mode not in ("off", NOT_RECORDED) and c_mode in ("off", NOT_RECORDED)
    if memory_off:
        rows.append(_row("memory check", b_mode, f"{c_mode} (--no-memcheck, or no --memcheck on a GPU)"))
    b_prof, c_prof = (str(r.env.get("hypothesis_profile")) for r in (base, cand))
    if b_prof != c_prof:
        b_n, c_n = EXAMPLES.get(b_prof), EXAMPLES.get(c_prof)
        if b_n is None or c_n is None or c_n < b_n:
            rows.append(_row("Hypothesis profile", f"{b_prof} ({b_n or '?'} examples a test)",
                             f"{c_prof} ({c_n or '?'} examples a test)", allow_tests))
    b_checks, c_checks = checks(base), checks(cand)
    b_one, c_one = _repro(base), _repro(cand)
    if c_one is not None and b_one is None:
        rows.append(_row("cases", "drawn by the profile", f"one case (--repro={c_one})", allow_tests))
    if c_checks is None:
        if b_checks is not None:
            rows.append(_row("check states", f"recorded ({_states(b_checks)})",
                             f"{NOT_RECORDED}: the candidate's run file records no state of the {SWITCHES}"))
        return rows
    b_get = (lambda k: b_checks.get(k)) if b_checks is not None else (lambda k: None)
    # The race check runs with the interpreter's memory check: where that is off, the memory check's row says so.
    b_races, c_races = b_get("races"), c_checks.get("races")
    if c_races != "on" and not memory_off and (b_races == "on" or (b_races is None and c_races == "off")):
        rows.append(_row("race check", _said(b_races, b_races is not None, DEFAULTS["races"]),
                         "off (SUITE_RACE_CHECK=0)" if c_races == "off" else str(c_races or NOT_RECORDED)))
    b_runs, c_runs = b_get("intermittent_runs"), c_checks.get("intermittent_runs")
    b_runs_n = b_runs if isinstance(b_runs, int) else DEFAULTS["intermittent_runs"]
    if _reran(cand) and (not isinstance(c_runs, int) or c_runs < b_runs_n):
        rows.append(_row("intermittent reruns", _said(b_runs, isinstance(b_runs, int), b_runs_n) +
                         " more runs of a wrong case",
                         f"{c_runs if isinstance(c_runs, int) else NOT_RECORDED} (SUITE_INTERMITTENT_RUNS): its wrong "
                         "cases ran again fewer times, an intermittent one more likely read as always wrong"))
    return rows


def _states(found: dict[str, Any]) -> str:
    return ", ".join(f"{k} {found[k]}" for k in ("races", "intermittent_runs", "compile_matrix", "compile_targets")
                     if k in found)


def _compile_key(r: dict[str, Any]) -> tuple[str, str]:
    return str(r.get("kernel")), str(r.get("target"))


def _compiled(run: Run) -> dict[tuple[str, str], set[str]]:
    """(kernel, target) -> what the compile matrix compiled for it (function, dtype, config; skipped ones left out)."""
    out: dict[tuple[str, str], set[str]] = {}
    for r in run.data.get("compiles") or []:
        if isinstance(r, dict) and r.get("status") != "skipped":
            out.setdefault(_compile_key(r), set()).add(json.dumps([r.get("function"), r.get("dtype"), r.get("config")],
                                                                  sort_keys=True))
    return out


def compile_rows(base: Run, cand: Run, allow_tests: bool = False) -> list[dict[str, Any]]:
    """What the base compiled that the candidate did not, per kernel x target: fewer configs or dtypes compiled
    (SUITE_COMPILE_MATRIX), a target left out (--compile-targets=own). Kernels the candidate compiled nothing of
    are a selection of fewer tests (allowed under --allow-different-tests); the others never are."""
    b_comp, c_comp = _compiled(base), _compiled(cand)
    c_kernels = {k for k, _ in c_comp}
    fewer, unselected = [], []
    for key in sorted(b_comp):
        had, has = len(b_comp[key]), len(c_comp.get(key, set()))
        if has < had:
            (fewer if key[0] in c_kernels else unselected).append(f"{key[0]} on {key[1]} ({has} of {had})")
    b_checks, c_checks = checks(base) or {}, checks(cand) or {}

    def how(found: dict[str, Any]) -> str:
        if not found:
            return NOT_RECORDED
        return f"SUITE_COMPILE_MATRIX={found.get('compile_matrix')}, --compile-targets={found.get('compile_targets')}"

    total = sum(map(len, b_comp.values()))
    rows = []
    for items, allowed in ((fewer, False), (unselected, allow_tests)):
        if items:
            rows.append(_row("compile matrix", f"{total} compile(s) ({how(b_checks)})",
                             f"fewer compiled ({how(c_checks)}): {_few(items)}", allowed))
    return rows


def _forced(run: Run) -> Any:
    """The --config every case of the run ran, where one was given (recorded, else from the command line)."""
    found = checks(run)
    if found is not None:
        return found.get("config")
    args = [str(a) for a in run.data.get("command") or []]
    given = [a.split("=", 1)[1] for a in args if a.startswith("--config=")]
    given += [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--config"]
    return given[0] if given else None


def _given(config: Any) -> str:
    return json.dumps(config, sort_keys=True) if isinstance(config, dict) else str(config)


def switched_off(base: Run, cand: Run) -> list[str]:
    """switch_rows as text, and a --config that ``cand`` forced where ``base`` did not: what ``cand`` checked less
    than ``base`` over the whole run (reports/current.py: a newer run that did supersedes nothing of the older)."""
    out = [text(r) for r in switch_rows(base, cand)]
    forced = _forced(cand)
    if forced is not None and _forced(base) is None:
        out.append(f"configs: the cache's and another of the family -> one forced (--config={_given(forced)})")
    return out


def not_recorded(base: Run, cand: Run) -> str | None:
    """What compare says where a run file records no check states (written before they were recorded)."""
    b, c = checks(base), checks(cand)
    if b is None and c is None:
        return (f"neither run file records its check states ({SWITCHES}: written before they were recorded): of those, "
                "only what the runs' records show was compared (the compiles, and each kernel x dtype's configs)")
    if b is None:
        return (f"the base run file records no check states ({SWITCHES}: written before they were recorded): the "
                f"candidate's were compared with the suite's defaults ({_states(DEFAULTS)}), each said as "
                f"'{NOT_RECORDED}'")
    return None


def checked_less(base: Run, cand: Run, allow_tests: bool = False) -> list[dict[str, Any]]:
    rows = switch_rows(base, cand, allow_tests) + compile_rows(base, cand, allow_tests)
    (b_mode, b_kernels), (c_mode, c_kernels) = _memcheck(base), _memcheck(cand)
    if b_mode not in ("off", "not recorded") and c_mode not in ("off", "not recorded"):
        # A kernel whose tests passed in the base and none of which passed now may never have launched: its failure
        # is a regression of its own, said first.
        broke = {k for k, _ in _passed(base)[1]} - {k for k, _ in _passed(cand)[1]}
        lost = sorted(k for k in b_kernels - c_kernels - broke if any(p[0] == k for p in _pairs(cand)))
        if lost:
            rows.append(_row("memory check", f"{b_mode}: saw {len(b_kernels)} kernel(s)",
                             f"no launch of {_few(lost)} seen"))
    b_cfg, c_cfg = _configs(base), _configs(cand)
    # A reference test that passed in the base and not now stopped short of its configs: its failure is said first.
    broke = _passed(base, REFERENCE_TEST)[1] - _passed(cand, REFERENCE_TEST)[1]
    whole = set(c_cfg) - broke
    forced = _forced(cand)
    how = "" if forced is None or _forced(base) is not None else f" (--config forced: {_given(forced)})"
    said = False
    for key in sorted(b_cfg.keys() & c_cfg.keys() & whole):
        if lost := sorted(b_cfg[key] - c_cfg[key]):
            said = True
            rows.append(_row(f"configs of {key[0]} {key[1]}", f"{len(b_cfg[key])} ran",
                             f"{len(c_cfg[key] & b_cfg[key])} of them ran{how}; never: {_few(lost)}"))
    if how and not said and b_cfg:  # every test that would show it failed first: the forced config said once
        rows.append(_row("configs", "the autotune cache's or the default, and another of the family for a sample "
                                    "of cases", f"one forced for every case{how}"))
    if lost_pairs := sorted(_pairs(base) - _pairs(cand)):
        rows.append(_row("kernel x dtype", f"{len(_pairs(base))} ran",
                         f"{len(lost_pairs)} did not run: {_few([' '.join(p) for p in lost_pairs])}", allow_tests))
    return rows
