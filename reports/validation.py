"""`python -m reports replay DIR`: the driver-validation evidence, compared again.

DIR holds pairs of run files of one machine: `aa-N/` two runs of identical software (A/A: any verdict other than
"no regressions" is a false alarm) and `planted-N/` a baseline and a run whose benchmarks of one kernel were made
slower on purpose (test hook SUITE_BENCH_PLANT, recorded in the run file). Every pair is compared both ways, twice:

- as recorded: as `python -m reports compare BASE CAND` does, with the noise floors the run files carry;
- leave-one-out: with a noise floor learned from the A/A runs outside the pair, so no pair is judged by a floor
  learned from itself.

Expected: A/A pairs exit 0 both ways; a planted pair exits 1 naming exactly the planted kernels as regressions, and
0 the other way round (the planted kernels as improvements)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from reports import changes, noise
from reports.compare import compare
from reports.loading import Run, RunFileError, load_runs, run_files
from reports.render import Section, Table, markdown

PAIR_DIR = re.compile(r"(aa|planted)-\d+")
MODES = ("as recorded", "leave-one-out")


@dataclass
class Pair:
    name: str
    kind: str  # "aa" or "planted"
    base: Run
    cand: Run
    planted: set[str] = field(default_factory=set)


@dataclass
class Check:
    pair: str
    kind: str
    direction: str  # "forward" (base -> candidate) or "reverse"
    mode: str
    exit_code: int
    regressions: list[str]
    improvements: list[str]
    inconclusive: int
    unchanged: int
    platform: str
    largest: float | None  # the largest decisive change (log) of a benchmark that was not planted
    planted_flagged: str  # "flagged/planted" benchmarks of the planted kernels
    expected: str
    ok: bool
    benchmarks_compared: int = 0


@dataclass
class Replay:
    directory: Path
    pairs: list[Pair]
    checks: list[Check]
    floors: dict[str, str]
    durations: dict[str, float]  # run id -> seconds from start to finish

    @property
    def missing(self) -> list[str]:
        """Why the evidence cannot be complete, whatever the checks say: a kind of pair absent, nothing compared."""
        kinds = {p.kind for p in self.pairs}
        out = [f"no {kind}-N/ pair ({what})" for kind, what in (("aa", "false alarms untested"),
                                                                 ("planted", "detection untested")) if kind not in kinds]
        return out + [f"{c.pair} {c.direction} ({c.mode}): no benchmark compared" for c in self.checks
                      if not c.benchmarks_compared]

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks) and not self.missing


def planted_kernels(run: Run) -> set[str]:
    return {b["kernel"] for b in run.data["benchmarks"] if isinstance(b.get("planted"), dict)}


def discover(directory: Path) -> list[Pair]:
    """The pairs under `directory`, in name order; an empty list when there are none."""
    if not directory.is_dir():
        return []
    pairs = []
    for sub in sorted(d for d in directory.iterdir() if d.is_dir() and PAIR_DIR.fullmatch(d.name)):
        files = run_files([sub])
        if len(files) != 2:
            raise RunFileError(f"{sub}: a pair directory holds exactly two run files (run-*.json or run-*.json.gz), "
                               f"found {len(files)}")
        first, second = load_runs(files)  # by start time
        kind = sub.name.split("-")[0]
        if kind == "aa":
            pairs.append(Pair(sub.name, kind, first, second))
            continue
        marked = [r for r in (first, second) if planted_kernels(r)]
        if len(marked) != 1:
            raise RunFileError(f"{sub}: a planted pair needs exactly one run with planted benchmarks (test hook "
                               f"SUITE_BENCH_PLANT), found {len(marked)}")
        cand = marked[0]
        pairs.append(Pair(sub.name, kind, second if cand is first else first, cand, planted_kernels(cand)))
    return pairs


def _duration(run: Run) -> float | None:
    try:
        return (datetime.fromisoformat(run.data["finished"]) - datetime.fromisoformat(run.data["started"])).total_seconds()
    except (TypeError, ValueError):
        return None


def _leave_one_out(pair: Pair, pairs: list[Pair]) -> tuple[noise.Floor | None, str]:
    excluded = {pair.base.run_id, pair.cand.run_id}
    runs = {r.run_id: r for p in pairs if p.kind == "aa" for r in (p.base, p.cand) if r.run_id not in excluded}
    if len(runs) < 2:
        return None, f"not available: {len(runs)} A/A run(s) outside {pair.name}"
    try:
        learned = noise.learn(sorted(runs.values(), key=lambda r: r.data["started"]))
        floor = noise.from_learned(learned, f"learned from {len(runs)} A/A runs outside {pair.name}")
    except RunFileError as exc:  # too few runs with rounds, or floors too large to use
        return None, f"not available: {exc}"
    return floor, floor.describe()


def _check(pair: Pair, direction: str, mode: str, floor: noise.Floor | None) -> Check:
    base, cand = (pair.base, pair.cand) if direction == "forward" else (pair.cand, pair.base)
    cmp = compare(base, cand, floor=floor, recorded_floor=mode == "as recorded")
    moved, _, plat = changes.pair(base, cand)
    others = [noise.decisive(m, plat["kernel"] or 0.0) for m in moved if m.base["kernel"] not in pair.planted]
    regressions = sorted({r["kernel"] for r in cmp.regressions})
    improvements = sorted({r["kernel"] for r in cmp.improvements})
    planted_rows = cmp.regressions if direction == "forward" else cmp.improvements
    planted_total = sum(1 for m in moved if m.base["kernel"] in pair.planted)
    flagged = sum(1 for r in planted_rows if r["kernel"] in pair.planted)
    if pair.kind == "aa":
        expected, ok = "exit 0", cmp.exit_code == 0
    elif direction == "forward":
        expected = f"exit 1, regressions: {', '.join(sorted(pair.planted))} only"
        ok = cmp.exit_code == 1 and regressions == sorted(pair.planted) and not cmp.correctness
    else:
        expected = f"exit 0, improvements: {', '.join(sorted(pair.planted))} only"
        ok = cmp.exit_code == 0 and set(improvements) <= pair.planted
    return Check(pair.name, pair.kind, direction, mode, cmp.exit_code, regressions, improvements, len(cmp.inconclusive),
                 sum(cmp.unchanged.values()), cmp.platform.get("verdict") or "no shift", max(others, default=None),
                 f"{flagged}/{planted_total}" if pair.planted else "-", expected, ok, cmp.compared["benchmarks"])


def replay(directory: Path) -> Replay:
    pairs = discover(directory)
    checks, floors = [], {}
    for pair in pairs:
        loo, floors[pair.name] = _leave_one_out(pair, pairs)
        for mode in MODES:
            if mode == "leave-one-out" and loo is None:
                continue
            for direction in ("forward", "reverse"):
                checks.append(_check(pair, direction, mode, loo if mode == "leave-one-out" else None))
    durations = {r.run_id: d for p in pairs for r in (p.base, p.cand) if (d := _duration(r)) is not None}
    return Replay(directory, pairs, checks, floors, durations)


def _pct(change: float | None) -> str:
    return changes.pct(change)


def figures(result: Replay, mode: str) -> dict[str, Any]:
    """The evidence in numbers, for one way of taking the noise floor."""
    checks = [c for c in result.checks if c.mode == mode]
    aa = [c for c in checks if c.kind == "aa"]
    planted = [c for c in checks if c.kind == "planted" and c.direction == "forward"]
    flagged = [c.planted_flagged.split("/") for c in planted]
    largest = [c.largest for c in aa if c.largest is not None]
    return {"aa_comparisons": len(aa), "aa_false_alarms": sum(c.exit_code != 0 for c in aa),
            "aa_flagged_kernels": sorted({k for c in aa for k in c.regressions + c.improvements}),
            "aa_inconclusive": sum(c.inconclusive for c in aa),
            "aa_largest_change": _pct(max(largest)) if largest else "-",
            "planted_comparisons": len(planted), "planted_detected": sum(c.exit_code == 1 and c.ok for c in planted),
            "planted_benchmarks_flagged": f"{sum(int(f) for f, _ in flagged)}/{sum(int(t) for _, t in flagged)}"}


def _figure_line(f: dict[str, Any], mode: str) -> str:
    return (f"{mode}: {f['aa_false_alarms']} false alarm(s) in {f['aa_comparisons']} A/A comparisons (largest change "
            f"of a benchmark {f['aa_largest_change']}, {f['aa_inconclusive']} inconclusive); planted slowdown "
            f"detected in {f['planted_detected']} of {f['planted_comparisons']} comparisons, "
            f"{f['planted_benchmarks_flagged']} planted benchmarks flagged.")


def _run_seconds(result: Replay) -> str:
    times = sorted(result.durations.values())
    return f"{len(times)} runs of {times[0]:.0f}-{times[-1]:.0f} s each (start to finish)" if times else "no run times"


def replay_markdown(result: Replay) -> str:
    if not result.pairs:
        return markdown(f"Driver-validation replay: {result.directory}", [],
                        [Section("Verdict", [f"No pairs under {result.directory} (aa-N/ or planted-N/ directories "
                                             "with two run files each): nothing to replay."])])
    headers = ["pair", "direction", "floor", "exit", "expected", "ok", "regressions", "improvements", "inconclusive",
               "unchanged", "platform", "largest other change", "planted flagged"]
    rows = [[c.pair, c.direction, c.mode, c.exit_code, c.expected, "yes" if c.ok else "NO (failed)",
             ", ".join(c.regressions) or "-", ", ".join(c.improvements) or "-", c.inconclusive, c.unchanged, c.platform,
             _pct(c.largest), c.planted_flagged] for c in result.checks]
    modes = [m for m in MODES if any(c.mode == m for c in result.checks)]
    notes = [f"**{'All expectations met' if result.passed else 'EXPECTATIONS FAILED'}**; {_run_seconds(result)}.",
             *([f"Evidence incomplete: {'; '.join(result.missing)}."] if result.missing else []),
             *(_figure_line(figures(result, m), m) for m in modes),
             "Largest other change: the largest change of a benchmark that was not planted, as the comparison "
             "decides on it (the smaller of its ratio-to-torch change and its kernel change net of the platform)."]
    floor_rows = [[name, text] for name, text in result.floors.items()]
    return markdown(f"Driver-validation replay: {result.directory}", [],
                    [Section("Verdict", notes, [Table(headers, rows, "Comparisons")]),
                     Section("Leave-one-out noise floors", [], [Table(["pair", "floor"], floor_rows)])])


def replay_json(result: Replay) -> dict[str, Any]:
    def clean(c: Check) -> dict[str, Any]:
        d = dict(c.__dict__)
        d["largest"] = None if c.largest is None or math.isnan(c.largest) else _pct(c.largest)
        return d

    return {"format": "driver-validation-replay/1", "directory": str(result.directory), "passed": result.passed,
            "missing": result.missing,
            "figures": {m: figures(result, m) for m in MODES}, "checks": [clean(c) for c in result.checks],
            "floors": result.floors, "durations_s": result.durations}
