"""`python -m reports compare BASE CAND`: correctness regressions and real speed changes between two runs of the same
test set on the same hardware (e.g. before and after a driver update).

A benchmark counts as slower (or faster) only when it moved beyond its limit, max(--threshold, its noise floor), in
both its kernel time (net of the platform's median shift) and its kernel/torch time ratio, and the runs' timing rounds
do not overlap (Mann-Whitney U p < --p-value). A benchmark either run measured as disturbed is inconclusive. A shift
of the whole platform (torch baselines and most kernels together) is reported once, and fails the comparison when it
is a slowdown beyond max(--threshold, the platform's floor). Run files without timing rounds fall back to the
Mann-Whitney U test on the do_bench samples, and the comparison says so. A benchmark the base timed that the
candidate lacks or cannot time (zero, negative, NaN or inf, no samples) is a regression, not "not compared".
Failures in both runs are matched case by case and by what fails (reports/failures.py): a changed failure, or a new
one in a test that already failed, is a regression."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from reports import changes, checked, failures, gate, noise, timing, toolchain
from reports.changes import pct
from reports.correctness import one_line, outcome_text
from reports.failure_kinds import FailureKind
from reports.loading import Run, num
from reports.perf import shape_key
from reports.render import Section, Table, fmt, markdown, shape_text, terminal

HARDWARE_FIELDS = ("device_name", "arch", "sm_count")
ENV_FIELDS = ("backend", "device_name", "arch", "sm_count", "driver", "runtime", "torch", "triton", "numpy",
              "hypothesis", "python", "platform", "hostname", "profile", "hypothesis_profile", "hypothesis_seed")
BAD = ("failed", "xfailed")
JSON_FORMAT = "run-comparison/1"
METHODS = {"rounds": "timing rounds (kernel and torch alternating)",
           "samples": "Mann-Whitney U on the do_bench samples (fallback: the run files have no timing rounds; it "
                      "measures the noise within one run, not between runs)"}


class CompareRefused(Exception):
    """The two runs should not be compared (different hardware or test set) unless the user says so."""


@dataclass
class Comparison:
    warnings: list[str] = field(default_factory=list)
    correctness: list[dict[str, Any]] = field(default_factory=list)
    fixed: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)  # passed in the base run, absent in the candidate
    regressions: list[dict[str, Any]] = field(default_factory=list)
    unmeasured: list[dict[str, Any]] = field(default_factory=list)  # timed in the base, missing or untimable now
    improvements: list[dict[str, Any]] = field(default_factory=list)
    inconclusive: list[dict[str, Any]] = field(default_factory=list)
    shared: list[dict[str, Any]] = field(default_factory=list)
    unchanged: Counter = field(default_factory=Counter)
    not_compared: list[dict[str, Any]] = field(default_factory=list)
    methods: Counter = field(default_factory=Counter)
    compared: Counter = field(default_factory=Counter)
    platform: dict[str, Any] = field(default_factory=dict)
    floor: str = "none"
    planted: list[str] = field(default_factory=list)
    toolchain: list[dict[str, str]] = field(default_factory=list)  # components whose version changed
    compiles: list[dict[str, Any]] = field(default_factory=list)  # compile-matrix changes per kernel x target
    unusable: str | None = None  # why the comparison, as a whole, could not be made
    # The toolchain gate: cached autotune winners that lose on the candidate (its --retune-check), and how many were
    # checked (None: the candidate ran no check).
    autotune_losses: list[dict[str, Any]] = field(default_factory=list)
    autotune_checked: int | None = None
    # What the candidate checked less than the base (reports/checked.py): a regression; `allowed` rows were let
    # through by --allow-different-tests and are said first, not failed.
    checked_less: list[dict[str, Any]] = field(default_factory=list)

    @property
    def platform_slower(self) -> bool:
        return self.platform.get("verdict") == "slower"

    @property
    def compile_failures(self) -> list[dict[str, Any]]:
        return [r for r in self.compiles if r["change"] == "compile failed"]

    @property
    def failed(self) -> bool:
        return bool(self.correctness or self.regressions or self.unmeasured or self.platform_slower
                    or self.compile_failures or self.autotune_losses
                    or any(not r["allowed"] for r in self.checked_less))

    @property
    def exit_code(self) -> int:
        return 2 if self.unusable else 1 if self.failed else 0


def check_comparable(base: Run, cand: Run, allow_hardware: bool, allow_tests: bool) -> list[str]:
    """Refuse different hardware or test sets unless allowed; return warnings for what was allowed."""
    warnings = []
    hw = [f"{k}: {base.env[k]!r} in {base.path} vs {cand.env[k]!r} in {cand.path}"
          for k in HARDWARE_FIELDS if base.env[k] != cand.env[k]]
    if hw and not allow_hardware:
        raise CompareRefused("refusing to compare runs on different hardware (" + "; ".join(hw) +
                             "); pass --allow-different-hardware to compare anyway")
    if hw:
        warnings.append("different hardware, compared on request: " + "; ".join(hw))
    problems = []
    for k in ("hypothesis_profile", "hypothesis_seed"):
        if base.env[k] != cand.env[k]:
            problems.append(f"{k}: {base.env[k]!r} in {base.path} vs {cand.env[k]!r} in {cand.path}")
    b_ids, c_ids = {t["nodeid"] for t in base.data["tests"]}, {t["nodeid"] for t in cand.data["tests"]}
    for ids, other, path in ((b_ids, c_ids, base.path), (c_ids, b_ids, cand.path)):
        only = sorted(ids - other)
        if only:
            problems.append(f"{len(only)} test(s) only in {path}, e.g. {only[0]}")
    if problems and not allow_tests:
        raise CompareRefused("refusing to compare runs of different test sets (" + "; ".join(problems) +
                             "); pass --allow-different-tests to compare anyway")
    if problems:
        warnings.append("different test sets, compared on request: " + "; ".join(problems))
    if base.env["hypothesis_seed"] is None:
        warnings.append(f"hypothesis profile {base.env['hypothesis_profile']!r} draws random examples: cases "
                        "match only by chance; use the validation profile for driver validation")
    warnings += [w for r in (base, cand) for w in r.warnings]
    return warnings


def _case_key(c: dict[str, Any]) -> tuple:
    return (c["kernel"], c["dtype"], shape_key(c["shape"]), c["layout"], c["values"], c["seed"])


def _cases(run: Run) -> dict[tuple, dict[str, Any]]:
    """One entry per case key; a key is bad if any of its records failed or xfailed."""
    out: dict[tuple, dict[str, Any]] = {}
    for c in run.data["cases"]:
        key = _case_key(c)
        if key not in out or c["outcome"] in BAD:
            out[key] = c
    return out


def _case_text(c: dict[str, Any]) -> str:
    return f"{c['kernel']}[{c['dtype']}] {shape_text(c['shape'])} {c['layout']} {c['values']} seed={c['seed']}"


def _outcome(kind: str, what: str, base: str, cand: str, detail: str) -> dict[str, Any]:
    return {"kind": kind, "what": what, "base": base, "candidate": cand, "detail": detail}


MISSING = "missing (not in the candidate run)"


def _correctness(base: Run, cand: Run, cmp: Comparison, allow_tests: bool = False) -> None:
    """A test or case that passed in the base run and failed, was skipped or is missing in the candidate is a
    regression: what no longer runs is not known to work. Under --allow-different-tests, missing ones are listed
    (cmp.missing), not failed. A failure in both runs is matched by what fails (reports/failures.py): a case that
    failed in both is a regression when its failure's kind changed, and a failing case the base has no record of,
    in a test that failed in the base, is one unless a failing case of that test in the base failed the same way."""
    c_tests = {t["nodeid"]: t for t in cand.data["tests"]}
    b_flaky, c_flaky = _intermittent_by_test(base), _intermittent_by_test(cand)
    for b in base.data["tests"]:
        t = c_tests.get(b["nodeid"])
        if t is None:
            if b["outcome"] == "passed":
                cmp.missing.append(_outcome("test", b["nodeid"], "passed", MISSING, "the candidate did not run it"))
            continue
        cmp.compared["tests"] += 1
        row = _outcome("test", t["nodeid"], _test_outcome(b, b_flaky), _test_outcome(t, c_flaky),
                       one_line(t["message"]))
        if b["outcome"] == "passed" and t["outcome"] in BAD:
            cmp.correctness.append(row)
        elif b["outcome"] in BAD and t["outcome"] in ("passed", "xpassed-strict"):
            cmp.fixed.append(row)
        elif b["outcome"] == "passed" and t["outcome"] == "skipped":
            cmp.skipped.append(row)
            cmp.correctness.append(row)
    b_cases, c_cases = _cases(base), _cases(cand)
    if base.env["hypothesis_seed"] is not None:  # derandomized: the candidate drew the same cases
        for key, b in b_cases.items():
            # a case of a test that failed, was skipped or is missing in the candidate is covered by the test's row
            test = c_tests.get(b.get("nodeid"), {"outcome": "passed"})
            if key not in c_cases and b["outcome"] == "passed" and test["outcome"] == "passed":
                cmp.missing.append(_outcome("case", _case_text(b), "passed", MISSING, f"reproduce with: {b['repro']}"))
    if not allow_tests:
        cmp.correctness += cmp.missing
    b_tests = {t["nodeid"]: t for t in base.data["tests"]}
    b_failures: dict[str, set[failures.Failure]] = {}  # test node id -> the kinds of its cases' failures in the base
    for b in b_cases.values():
        if b["outcome"] in BAD:
            b_failures.setdefault(b.get("nodeid"), set()).add(failures.failure(b))
    for key, c in c_cases.items():
        b = b_cases.get(key)
        if b is None:
            if c["outcome"] in BAD:
                _new_failure(c, b_tests.get(c.get("nodeid")), b_failures.get(c.get("nodeid"), set()), cmp)
            continue
        cmp.compared["cases"] += 1
        what = _case_text(c)
        if b["outcome"] == "passed" and c["outcome"] in BAD:
            cmp.correctness.append(_outcome("case", what, b["outcome"], outcome_text(c),
                                            f"error/bound {fmt(num(c['error_ratio']))}; reproduce with: {c['repro']}"))
        elif b["outcome"] in BAD and c["outcome"] == "passed":
            cmp.fixed.append(_outcome("case", what, outcome_text(b), c["outcome"], ""))
        elif b["outcome"] in BAD and c["outcome"] in BAD:
            fb, fc = failures.failure(b), failures.failure(c)
            if fb != fc:
                cmp.correctness.append(_outcome("case", what, f"{outcome_text(b)}: {fb.text()}",
                                                f"{outcome_text(c)}: {fc.text()}",
                                                f"failure changed; reproduce with: {c['repro']}"))


def _new_failure(c: dict[str, Any], base_test: dict[str, Any] | None, base_kinds: set[failures.Failure],
                 cmp: Comparison) -> None:
    """A failing candidate case the base run has no record of, in a test that failed in the base run too: a
    regression unless one of the base test's failing cases failed the same way (cases drawn differently, or shrunk
    to another case, by the same failure). A test that passed in the base has its own row; one the base lacks or
    skipped is not judged here."""
    if base_test is None or base_test["outcome"] not in BAD:
        return
    fc = failures.failure(c)
    if fc in base_kinds:
        return
    before = "; ".join(sorted(f.text() for f in base_kinds)) or "no case recorded"
    cmp.correctness.append(_outcome("case", _case_text(c), f"no record; its test {base_test['outcome']} on: {before}",
                                    f"{outcome_text(c)}: {fc.text()}",
                                    f"a new failure in a test that failed before; reproduce with: {c['repro']}"))


def _intermittent_by_test(run: Run) -> dict[str, dict[str, Any]]:
    """Test node id -> its intermittent case record (failure 'intermittent'), for the tests that have one."""
    return {c["nodeid"]: c for c in run.data["cases"] if c.get("failure") == FailureKind.INTERMITTENT and c.get("nodeid")}


def _test_outcome(test: dict[str, Any], intermittent: dict[str, dict[str, Any]]) -> str:
    """A test's outcome, named intermittent with the rate where the failure was one of its cases wrong only sometimes."""
    case = intermittent.get(test["nodeid"])
    if case is None or test["outcome"] not in BAD:
        return test["outcome"]
    return outcome_text({**case, "outcome": test["outcome"]})


def _limit(threshold: float, floor: float | None) -> float:
    """A relative limit as a log change."""
    return math.log1p(max(threshold, floor or 0.0))


def classify(m: changes.Moved, platform: dict[str, Any], limit: float, p_value: float) -> tuple[str, str]:
    """(bucket, why) for one benchmark: regression, improvement, inconclusive, shared or unchanged."""
    up = "regression" if (m.ratio if m.ratio is not None else m.kernel) > 0 else "improvement"
    if m.disturbed:
        return "inconclusive", m.disturbed
    if m.method == "samples":
        if m.p < p_value and abs(m.kernel) > limit:
            return ("regression" if m.kernel > 0 else "improvement"), ""
        if m.p < p_value:
            return "unchanged", "statistically real but within the limit"
        return "unchanged", "beyond the limit but not statistically real" if abs(m.kernel) > limit else "within the limit"
    relative = m.kernel - (platform["kernel"] or 0.0)
    if m.ratio is None:
        beyond = abs(relative) > limit
    else:
        beyond = abs(m.ratio) > limit and abs(relative) > limit and (m.ratio > 0) == (relative > 0)
    if beyond and m.p < p_value:
        return up, ""
    if beyond:
        return "inconclusive", f"moved {pct(m.ratio if m.ratio is not None else relative)} but the runs' rounds " \
                               f"overlap (p = {m.p:.2g})"
    torch_relative = None if m.torch is None or platform["torch"] is None else m.torch - platform["torch"]
    if abs(relative) > limit and torch_relative is not None and abs(torch_relative) > limit \
            and (relative > 0) == (torch_relative > 0):
        return "shared", "moved together with its torch baseline"
    if m.ratio is not None and abs(m.ratio) > limit:
        return "unchanged", "its torch baseline moved, the kernel did not"
    return "unchanged", "within the limit"


def _row(m: changes.Moved, limit: float, why: str) -> dict[str, Any]:
    b, c = m.base, m.cand
    return {**m.what, "base_ms": changes.timing.median_ms(b), "candidate_ms": changes.timing.median_ms(c),
            "change": pct(m.ratio if m.ratio is not None else m.kernel), "kernel_change": pct(m.kernel),
            "torch_change": pct(m.torch), "limit": f"{100 * math.expm1(limit):.1f}%", "p": float(f"{m.p:.2g}"),
            "rounds": m.counts, "method": m.method,
            "config": "changed" if b.get("config") != c.get("config") else "same", "why": why,
            "_sort": m.ratio if m.ratio is not None else m.kernel}


def _platform_verdict(plat: dict[str, Any], threshold: float, floor: noise.Floor | None) -> dict[str, Any]:
    limit = _limit(threshold, floor.platform if floor else None)
    shift = plat["torch"] if plat["torch"] is not None else plat["kernel"]
    out = {**plat, "limit": f"{100 * math.expm1(limit):.1f}%", "verdict": None}
    if shift is None:
        return out
    agree = plat["kernel"] is not None and (plat["torch"] is None or (plat["kernel"] > 0) == (plat["torch"] > 0))
    if abs(shift) > limit and agree:
        out["verdict"] = "slower" if shift > 0 else "faster"
    return out


def _planted(run: Run) -> list[str]:
    found = {}
    for b in run.data["benchmarks"]:
        p = b.get("planted")
        if isinstance(p, dict):
            found[b["kernel"]] = f"{b['kernel']} (+{100 * (num(p.get('fraction')) or 0):.0f}% delay)"
    return sorted(found.values())


def _timing_problem(rec: dict[str, Any]) -> str | None:
    """Why a benchmark record's timing is broken (a zero, negative, NaN or infinite time, no samples, unusable
    rounds, the same of its torch baseline), or None."""
    why = timing.invalid_reason(rec)
    if why:
        return why
    if not rec.get("samples_ms"):
        return "no samples"
    bad = timing.invalid_samples(rec)
    if bad:
        return f"{bad} of {len(rec['samples_ms'])} samples invalid (zero, negative, NaN or inf)"
    if isinstance(rec.get("rounds"), dict) and timing.rounds(rec) is None:
        return f"timing rounds unusable (fewer than {timing.MIN_ROUNDS} valid)"
    torch = rec.get("baseline")
    if isinstance(torch, dict):
        if timing.median_ms(torch) is None:
            return "torch baseline: no valid timing"
        bad = timing.invalid_samples(torch)
        if bad:
            return f"torch baseline: {bad} of {len(torch.get('samples_ms') or [])} samples invalid"
    return None


def _unmeasured(base: Run, cand: Run, cmp: Comparison, allow_tests: bool) -> set[str]:
    """Benchmarks the base run timed that the candidate no longer has (missing) or could not time (untimable): a
    regression, as a test that passed and is skipped or missing now. Under --allow-different-tests a missing one is
    listed (cmp.missing), not failed. Returns the keys of both, which are not compared for speed."""
    c_bench = {changes.key(c): c for c in cand.data["benchmarks"]}
    judged = set()
    for b in base.data["benchmarks"]:
        if _timing_problem(b):  # the base timed nothing usable: nothing was known to work
            continue
        k, c = changes.key(b), c_bench.get(changes.key(b))
        row = {"kernel": b["kernel"], "dtype": b["dtype"], "shape": shape_text(b["shape"]),
               "base_ms": timing.median_ms(b)}
        if c is None:
            judged.add(k)
            row.update(change="missing", candidate="missing (not in the candidate run)")
            if allow_tests:
                cmp.missing.append(_outcome("benchmark", f"{row['kernel']} {row['dtype']} {row['shape']}",
                                            f"{fmt(row['base_ms'], 4)} ms", row["candidate"],
                                            "the candidate did not run it"))
            else:
                cmp.unmeasured.append(row)
            continue
        why = _timing_problem(c)
        if why:
            row.update(change="untimable", candidate=why)
            cmp.unmeasured.append(row)
            judged.add(k)
    return judged


def _speed(base: Run, cand: Run, cmp: Comparison, p_value: float, threshold: float, floor: noise.Floor | None,
           allow_tests: bool = False) -> None:
    judged = _unmeasured(base, cand, cmp, allow_tests)
    moved, skipped, _ = changes.pair(base, cand)
    moved = [m for m in moved if m.key not in judged]
    skipped = [(rec, why) for rec, why in skipped if changes.key(rec) not in judged]
    cmp.platform = _platform_verdict(changes.platform(moved), threshold, floor)
    for rec, why in skipped:
        cmp.not_compared.append({"kernel": rec["kernel"], "dtype": rec["dtype"], "shape": shape_text(rec["shape"]),
                                 "why": why})
    for m in moved:
        cmp.methods[m.method] += 1
        if m.base.get("correct") is True and m.cand.get("correct") is False:
            cmp.correctness.append(_outcome("benchmark", " ".join(m.what.values()), "correct", "WRONG output",
                                            "benchmarked output"))
        limit = _limit(threshold, floor.of(m.key) if floor else None)
        bucket, why = classify(m, cmp.platform, limit, p_value)
        if bucket == "unchanged":
            cmp.unchanged[why] += 1
        else:
            getattr(cmp, {"regression": "regressions", "improvement": "improvements"}.get(bucket, bucket)).append(
                _row(m, limit, why))
    cmp.compared["benchmarks"] = len(moved)
    for rows, sign in ((cmp.regressions, -1), (cmp.improvements, 1), (cmp.inconclusive, -1), (cmp.shared, -1)):
        rows.sort(key=lambda r: sign * r["_sort"])


def compare(base: Run, cand: Run, p_value: float = 0.01, threshold: float = 0.05, allow_hardware: bool = False,
            allow_tests: bool = False, floor: noise.Floor | None = None, recorded_floor: bool = True) -> Comparison:
    """floor: the noise floor to use; None takes the one recorded in the run files unless recorded_floor is False."""
    cmp = Comparison(warnings=check_comparable(base, cand, allow_hardware, allow_tests))
    if floor is not None:
        noise.check_fits(floor, [base, cand])
    elif recorded_floor:
        floor = noise.recorded(base, cand)
    cmp.toolchain = toolchain.toolchain_changes(base, cand)
    if code := toolchain.code_changes(base, cand):
        cmp.warnings.append("the runs tested different code: " + "; ".join(code))
    cmp.compiles, cmp.compared["compiles"] = toolchain.compile_changes(base, cand)
    cmp.floor = floor.describe() if floor else "none (the threshold alone)"
    cmp.planted = _planted(cand) + [f"{p} in the base run" for p in _planted(base)]
    if cmp.planted:
        cmp.warnings.append("a run has a planted slowdown (test hook SUITE_BENCH_PLANT): " + ", ".join(cmp.planted) +
                            "; it tests this comparison and is not a real measurement")
    _correctness(base, cand, cmp, allow_tests)
    _speed(base, cand, cmp, p_value, threshold, floor, allow_tests)
    _autotune_gate(cand, cmp)
    cmp.checked_less = checked.checked_less(base, cand, allow_tests)
    if note := checked.not_recorded(base, cand):
        cmp.warnings.append(note)
    if cmp.missing and allow_tests:
        benchmarks = sum(1 for r in cmp.missing if r["kind"] == "benchmark")
        cmp.warnings.append(f"{len(cmp.missing) - benchmarks} test(s) or case(s) that passed in the base run "
                            + (f"and {benchmarks} benchmark(s) it timed " if benchmarks else "") +
                            "are missing in the candidate, allowed by --allow-different-tests: not compared (listed "
                            "under Passed before, missing now)")
    benchmarks_matched = cmp.compared["benchmarks"] + sum(1 for r in cmp.not_compared if not r["why"].startswith("only"))
    if not sum(n for what, n in cmp.compared.items() if what != "compiles") and not cmp.unmeasured:
        cmp.unusable = "nothing to compare: no test, case or benchmark of one run has a usable counterpart in the other"
    elif benchmarks_matched and not cmp.compared["benchmarks"] and not cmp.unmeasured:
        cmp.unusable = (f"no benchmark could be compared ({benchmarks_matched} in both runs): "
                        + _reasons(cmp.not_compared))
    if not base.data["benchmarks"] and not cand.data["benchmarks"]:
        cmp.warnings.append("neither run has benchmarks (run `pytest -m perf` on the GPU): speed was not compared")
    return cmp


def _autotune_gate(cand: Run, cmp: Comparison) -> None:
    """The candidate's --retune-check (suite/checks/autotune.py, gate_records): every cached winner that now loses to
    another config by more than the timings' noise is a regression: the shipped cache no longer serves this
    toolchain (retune it)."""
    check = (cand.data.get("autotune") or {}).get("check")
    if not isinstance(check, dict) or not isinstance(check.get("entries"), list):
        return
    entries = [e for e in check["entries"] if isinstance(e, dict)]
    cmp.autotune_checked = len(entries)
    # A winner timed as no positive, finite time loses, whatever the check that wrote the run file judged.
    cmp.autotune_losses = [e for e in entries if e.get("loses") or
                           ("cached_ms" in e and e["cached_ms"] is not None and not gate.valid_ms(num(e["cached_ms"])))]


def _reasons(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"{n} {why}" for why, n in Counter(r["why"] for r in rows).most_common())


def verdict(cmp: Comparison) -> str:
    if cmp.unusable:
        return f"CANNOT COMPARE: {cmp.unusable}"
    parts = []  # what broke first; what the candidate checked less after it
    if cmp.correctness:
        kinds = Counter(r["kind"] for r in cmp.correctness)  # a failing test and its failing cases are each one
        counted = ", ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in sorted(kinds.items(), key=lambda kv: (
            ("test", "case", "benchmark").index(kv[0]) if kv[0] in ("test", "case", "benchmark") else 3, kv[0])))
        parts.append(f"{len(cmp.correctness)} correctness regression(s) ({counted}: "
                     f"{_named(_outcome_text(r) for r in cmp.correctness)})")
    if cmp.compile_failures:
        where = ", ".join(dict.fromkeys(f"{r['kernel']} on {r['target']}" for r in cmp.compile_failures))
        parts.append(f"{sum(r['configs'] for r in cmp.compile_failures)} compile regression(s) ({where})")
    if cmp.platform_slower:
        parts.append(f"platform-wide slowdown {pct(_shift(cmp.platform))}")
    if cmp.regressions:
        kernels = ", ".join(dict.fromkeys(r["kernel"] for r in cmp.regressions))
        parts.append(f"{len(cmp.regressions)} speed regression(s) ({kernels})")
    if cmp.autotune_losses:
        parts.append(f"{len(cmp.autotune_losses)} cached autotune winner(s) lose on the candidate toolchain "
                     f"({_named(gate.where(g) for g in cmp.autotune_losses)})")
    if cmp.unmeasured:
        parts.append(f"{len(cmp.unmeasured)} benchmark(s) missing or untimable "
                     f"({_named(_unmeasured_text(r) for r in cmp.unmeasured)})")
    if less := [r for r in cmp.checked_less if not r["allowed"]]:
        parts.append(f"the candidate checked less than the base ({_named(checked.text(r) for r in less)})")
    allowed = [r for r in cmp.checked_less if r["allowed"]]
    said = _named(checked.text(r) for r in allowed)
    if parts:
        return "REGRESSION: " + "; ".join(parts) + (f"; checked less, allowed by --allow-different-tests: {said}"
                                                    if allowed else "")
    return (f"CHECKED LESS (allowed by --allow-different-tests: {said}); " if allowed else "") + "No regressions"


VERDICT_NAMES = 3  # regressions named in the verdict line; the sections list them all


def _named(texts: Any) -> str:
    texts = list(texts)
    more = len(texts) - VERDICT_NAMES
    return "; ".join(texts[:VERDICT_NAMES]) + (f"; and {more} more" if more > 0 else "")


def _outcome_text(r: dict[str, Any]) -> str:
    return f"{r['what']}: {r['base']} -> {r['candidate']}"


def _unmeasured_text(r: dict[str, Any]) -> str:
    return f"{r['kernel']} {r['dtype']} {r['shape']}: {r['change']}, base {fmt(r['base_ms'], 4)} ms -> {r['candidate']}"


def _shift(plat: dict[str, Any]) -> float | None:
    return plat["torch"] if plat.get("torch") is not None else plat.get("kernel")


def platform_line(cmp: Comparison) -> str:
    p = cmp.platform
    if not p or p.get("kernel") is None:
        return f"Platform: too few benchmarks ({p.get('benchmarks', 0)}) to tell a platform-wide shift."
    torch = f"torch baselines {pct(p['torch'])} (median of {p['baselines']}), " if p["torch"] is not None else ""
    what = {"slower": "PLATFORM-WIDE SLOWDOWN", "faster": "platform-wide speed-up"}.get(p["verdict"])
    head = f"{what} of {pct(_shift(p))}" if what else "no platform-wide shift"
    net = " Per-benchmark kernel changes are judged net of the kernels' median shift." if cmp.methods["rounds"] else ""
    return f"Platform: {head}: {torch}kernels {pct(p['kernel'])} (median of {p['benchmarks']}); limit {p['limit']}.{net}"


RULES = {"rounds": "beyond max({threshold}, the benchmark's noise floor) in both its kernel/torch ratio and its kernel "
                   "time, with Mann-Whitney U p < {p} between the two runs' rounds",
         "samples": "beyond max({threshold}, the benchmark's noise floor) in its median, with Mann-Whitney U p < {p} "
                    "on the samples"}


def _compile_line(cmp: Comparison) -> str:
    if not cmp.compared["compiles"]:
        return "Compile matrix: no compile in both runs."
    kinds = Counter()
    for r in cmp.compiles:
        kinds[r["change"]] += r["configs"]
    return (f"Compile matrix: {cmp.compared['compiles']} compile(s) in both runs; " +
            (", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())) or "no change") + ".")


def _gate_line(cmp: Comparison) -> str:
    if cmp.autotune_checked is None:
        return ("Autotune gate: the candidate ran no --retune-check (its cached winners were not timed against the "
                "other configs).")
    return (f"Autotune gate: {cmp.autotune_checked} cached winner(s) timed against every config on the candidate; "
            f"{len(cmp.autotune_losses)} lose by more than {100 * gate.MARGIN:g}% and the timings' spread.")


def summary_lines(cmp: Comparison, p_value: float, threshold: float) -> list[str]:
    compared = ", ".join(f"{n} {what}" for what, n in cmp.compared.items() if n) or "nothing"
    lines = [f"**{verdict(cmp)}**; {len(cmp.improvements)} speed improvement(s), {len(cmp.inconclusive)} "
             f"inconclusive, {sum(cmp.unchanged.values())} benchmark(s) unchanged, {len(cmp.fixed)} fixed.",
             f"Compared: {compared}." + (f" Not compared: {len(cmp.not_compared)} benchmark(s) "
                                         f"({_reasons(cmp.not_compared)})." if cmp.not_compared else ""),
             toolchain.toolchain_line(cmp.toolchain),
             _compile_line(cmp),
             _gate_line(cmp),
             platform_line(cmp)]
    for method, n in sorted(cmp.methods.items()):
        rule = RULES[method].format(threshold=f"{100 * threshold:g}%", p=f"{p_value:g}")
        lines.append(f"Method for {n} benchmark(s): {METHODS[method]}; a change counts {rule}.")
    lines.append(f"Noise floor: {cmp.floor}.")
    return lines


SPEED_HEADERS = ["kernel", "dtype", "shape", "base ms", "candidate ms", "change", "kernel change", "torch change",
                 "limit", "p", "n base/candidate", "method", "config"]
SPEED_NOTE = ("change: of the kernel/torch ratio (rounds) or of the kernel's median (samples); n: rounds (rounds) or "
              "samples (samples) per run.")


def _speed_rows(rows: list[dict[str, Any]], why: bool = False) -> list[list[Any]]:
    return [[r["kernel"], r["dtype"], r["shape"], fmt(r["base_ms"], 4), fmt(r["candidate_ms"], 4), r["change"],
             r["kernel_change"], r["torch_change"], r["limit"], f"{r['p']:.2g}", r["rounds"], r["method"], r["config"],
             *([r["why"]] if why else [])] for r in rows]


def _outcome_rows(rows: list[dict[str, Any]]) -> list[list[Any]]:
    return [[r["kind"], r["what"], r["base"], r["candidate"], r["detail"]] for r in rows]


def compare_terminal(base: Run, cand: Run, cmp: Comparison, p_value: float, threshold: float, width: int) -> str:
    """The comparison for a terminal: its verdict first, the sections with something in them, no line wider than
    ``width`` (reports.render.terminal); run-file strings shown as they are, with no Markdown escape."""
    title, warnings, sections = _sections(base, cand, cmp, p_value, threshold)
    lines = summary_lines(cmp, p_value, threshold)
    verdict_section = sections[0]
    verdict_section.notes = lines[1:]
    return terminal([lines[0], title], warnings, sections, width)


def compare_markdown(base: Run, cand: Run, cmp: Comparison, p_value: float, threshold: float) -> str:
    return markdown(*_sections(base, cand, cmp, p_value, threshold))


def _sections(base: Run, cand: Run, cmp: Comparison, p_value: float,
              threshold: float) -> tuple[str, list[str], list[Section]]:
    env_rows = [[k, fmt(base.env.get(k)), fmt(cand.env.get(k))] for k in ENV_FIELDS if base.env.get(k) != cand.env.get(k)]
    outcome_headers = ["kind", "what", "base", "candidate", "detail"]
    unchanged = sum(cmp.unchanged.values())
    sections = [
        Section("Verdict", summary_lines(cmp, p_value, threshold),
                [Table(["", "base", "candidate"], [["run", base.run_id, cand.run_id], ["file", str(base.path),
                                                   str(cand.path)]]),
                 Table(["environment field", "base", "candidate"], env_rows, "Environment differences", "none")]),
        Section("Correctness regressions", ["A test or case that passed in the base run and failed, was skipped or "
                                            "is missing in the candidate; a case that failed in both whose failure "
                                            "changed (class, failing outputs, checks or the element they name); a "
                                            "case the base has no record of that fails in a test that failed in the "
                                            "base on other cases only, unless one of them failed the same way."],
                [Table(outcome_headers, _outcome_rows(cmp.correctness), empty="none")]),
        Section("Checked less than the base", [checked.RULE],
                [Table(["what", "base", "candidate", "allowed"],
                       [[r["what"], r["base"], r["candidate"], "yes" if r["allowed"] else "no"]
                        for r in cmp.checked_less], empty="none")]),
        Section("Compile changes", [f"Per kernel x target: compiles that failed now (a regression) or compile now, "
                                    f"registers that moved by at least {toolchain.REGISTERS_MIN} and "
                                    f"{100 * toolchain.REGISTERS_SHARE:g}%, spills that appeared or went away."],
                [Table(["kernel", "target", "change", "configs", "detail"],
                       [[r["kernel"], r["target"], r["change"], r["configs"], r["detail"]] for r in cmp.compiles],
                       empty="none")]),
        Section("Autotune winners that lose on the candidate", [
            "Each cached config timed again beside every other config of its kernel on the candidate toolchain "
            "(`--retune-check`); listed where it is now slower than the fastest by more than "
            f"{100 * gate.MARGIN:g}% and the two timings' interquartile ranges: retune that kernel."],
                [Table(["kernel", "dtype", "shape", "cached config", "cached ms", "fastest config", "fastest ms",
                        "loss"],
                       [[g["kernel"], g["dtype"], ",".join(f"{k}={v}" for k, v in g["shape"].items()),
                         json.dumps(g["cached_config"], sort_keys=True), fmt(g.get("cached_ms"), 4) if
                         g.get("cached_ms") is not None else g.get("why"), json.dumps(g["best_config"], sort_keys=True),
                         fmt(g["best_ms"], 4), f"{g['loss']:.2f}x" if g.get("loss") else "-"]
                        for g in cmp.autotune_losses], empty="none")]),
        Section("Speed regressions", [SPEED_NOTE], [Table(SPEED_HEADERS, _speed_rows(cmp.regressions), empty="none")]),
        Section("Benchmarks missing or untimable", ["Timed in the base run; in the candidate missing, or timed as "
                                                    "zero, negative, NaN or inf, without samples or with unusable "
                                                    "rounds: a regression (a timer that fails measures nothing)."],
                [Table(["kernel", "dtype", "shape", "change", "base ms", "candidate"],
                       [[r["kernel"], r["dtype"], r["shape"], r["change"], fmt(r["base_ms"], 4), r["candidate"]]
                        for r in cmp.unmeasured], empty="none")]),
        Section("Speed improvements", [], [Table(SPEED_HEADERS, _speed_rows(cmp.improvements), empty="none")]),
        Section("Inconclusive", ["Benchmarks that moved but whose measurement cannot carry a verdict: disturbed in a "
                                 "run even after re-measuring, or rounds that overlap."],
                [Table([*SPEED_HEADERS, "why"], _speed_rows(cmp.inconclusive, True), empty="none")]),
        Section("Moved with the torch baseline", ["Kernel and torch baseline moved together beyond the limit while "
                                                  "their ratio did not: machine state or a change shared with torch, "
                                                  "not a change of the kernel. Shown, not failed."],
                [Table(SPEED_HEADERS, _speed_rows(cmp.shared), empty="none")]),
        Section("Unchanged and not compared", [f"{unchanged} benchmark(s) unchanged: " +
                                               (", ".join(f"{n} {why}" for why, n in sorted(cmp.unchanged.items()))
                                                or "none")],
                [Table(outcome_headers, _outcome_rows(cmp.fixed), "Fixed", "none"),
                 Table(outcome_headers, _outcome_rows(cmp.missing), "Passed before, missing now", "none"),
                 Table(["kernel", "dtype", "shape", "why"], [[r["kernel"], r["dtype"], r["shape"], r["why"]]
                                                             for r in cmp.not_compared], "Benchmarks not compared",
                       "none")]),
    ]
    return f"Run comparison: {base.run_id} -> {cand.run_id}", cmp.warnings, sections


def compare_json(base: Run, cand: Run, cmp: Comparison, p_value: float, threshold: float) -> dict[str, Any]:
    """The comparison for scripts: the same verdict and lists as the Markdown."""
    def clean(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]

    return {"format": JSON_FORMAT, "verdict": verdict(cmp), "exit_code": cmp.exit_code, "failed": cmp.failed,
            "unusable": cmp.unusable,
            "base": {"run_id": base.run_id, "file": str(base.path)},
            "candidate": {"run_id": cand.run_id, "file": str(cand.path)},
            "p_value": p_value, "threshold": threshold, "noise_floor": cmp.floor,
            "methods": dict(cmp.methods), "compared": dict(cmp.compared),
            "platform": {**cmp.platform, "kernel_change": pct(cmp.platform.get("kernel")),
                         "torch_change": pct(cmp.platform.get("torch"))},
            "warnings": cmp.warnings, "planted": cmp.planted, "toolchain": cmp.toolchain,
            "toolchain_line": toolchain.toolchain_line(cmp.toolchain), "compile_changes": cmp.compiles,
            "correctness_regressions": cmp.correctness, "speed_regressions": clean(cmp.regressions),
            "checked_less": cmp.checked_less,
            "autotune_checked": cmp.autotune_checked, "autotune_losses": cmp.autotune_losses,
            "unmeasured_benchmarks": cmp.unmeasured,
            "speed_improvements": clean(cmp.improvements), "inconclusive": clean(cmp.inconclusive),
            "moved_with_torch": clean(cmp.shared), "unchanged": dict(cmp.unchanged),
            "not_compared": cmp.not_compared, "fixed": cmp.fixed, "skipped": cmp.skipped, "missing": cmp.missing}
