"""Noise floors: how far a benchmark moves between two runs of identical software on one machine (A/A runs).

`python -m reports noise-floor RUN.json ... --out reports/noise/<arch>.json` learns one from two or more such runs
(METHOD below). The suite reads the file of its arch (suite/tools/bench.py) and writes each benchmark's
floor, and the platform's, into the run file; `compare` then calls a change real only beyond max(--threshold,
floor). The file also keeps each benchmark's usual round-to-round spread and sample tail, against which the suite
tells a disturbed measurement (one it re-measures)."""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import reports
from reports import changes, floor_file, timing
from reports.loading import Run, RunFileError, num

FORMAT = floor_file.FORMAT
MARGIN = 1.5
DEFAULT_QUANTILE = 0.9  # the floor of a benchmark the A/A runs did not have: this quantile of the others'
METHOD = (f"For every pair of the runs, each benchmark's change that decides a verdict in compare (the smaller of its "
          f"kernel/torch ratio change and its kernel change net of the platform's median shift); a benchmark's floor is "
          f"{MARGIN:g} times the largest such change, the platform's {MARGIN:g} times the largest median shift of the "
          f"torch baselines. Disturbed measurements are left out.")
SOFTWARE = ("device_name", "arch", "sm_count", "driver", "runtime", "torch", "triton", "hypothesis_profile")


@dataclass
class Floor:
    """Relative floors (0.04 = 4%) per benchmark key, for benchmarks not listed, and for the platform shift."""
    source: str
    benchmarks: dict[str, float] = field(default_factory=dict)
    default: float | None = None
    platform: float | None = None
    arch: str | None = None  # the hardware it was learned on (None: not known)
    device_name: str | None = None

    def of(self, key: str) -> float | None:
        return self.benchmarks.get(key, self.default)

    def describe(self) -> str:
        values = sorted(self.benchmarks.values())
        span = f"{100 * values[0]:.1f}-{100 * values[-1]:.1f}% per benchmark" if values else "none per benchmark"
        extra = [f"{100 * self.default:.1f}% for others" if self.default is not None else "",
                 f"{100 * self.platform:.1f}% for the platform" if self.platform is not None else ""]
        return f"{self.source}: {', '.join([span, *filter(None, extra)])}"


def _fraction(x: Any) -> float | None:
    v = num(x)
    return v if v is not None and math.isfinite(v) and v >= 0 else None


def _recorded_problem(run: Run) -> str | None:
    """Why the floors a run file records must not be used: implausible, or learned on another device."""
    note = (run.data.get("ceilings") or {}).get("noise_floor")
    if isinstance(note, dict) and note.get("file"):
        device = note.get("device_name")
        if device is not None and device != run.env["device_name"]:
            return f"they come from {note['file']}, learned on {device!r}, not {run.env['device_name']!r}"
        platform = num(note.get("platform"))
        if platform is not None and not floor_file.plausible(platform, floor_file.MAX_FLOOR):
            return f"its platform floor is {note.get('platform')!r}, not a number from 0 to {floor_file.MAX_FLOOR:g}"
    for b in run.data["benchmarks"]:
        f = num(b.get("noise_floor"))
        if f is not None and not floor_file.plausible(f, floor_file.MAX_FLOOR):
            return (f"benchmark {changes.key(b)!r} has floor {b.get('noise_floor')!r}, not a number from 0 to "
                    f"{floor_file.MAX_FLOOR:g}")
    return None


def recorded(base: Run, cand: Run) -> Floor | None:
    """The floors the suite wrote into the two run files (the larger of the two where both have one). Floors that
    must not be used (implausible, or of another device) are refused, naming the run file and the benchmark."""
    for run in (base, cand):
        why = _recorded_problem(run)
        if why:
            raise RunFileError(f"{run.path}: refusing its recorded noise floors: {why}; pass --noise-floor FILE "
                               "(one learned on this device) or --no-noise-floor")
    notes = [r.data.get("ceilings", {}).get("noise_floor") for r in (base, cand)]
    per: dict[str, float] = {}
    for run in (base, cand):
        for b in run.data["benchmarks"]:
            f = _fraction(b.get("noise_floor"))
            if f is not None:
                per[changes.key(b)] = max(f, per.get(changes.key(b), 0.0))
    platforms = [_fraction(n.get("platform")) for n in notes if isinstance(n, dict)]
    platforms = [p for p in platforms if p is not None]
    if not per and not platforms:
        return None
    files = sorted({str(n.get("file")) for n in notes if isinstance(n, dict) and n.get("file")})
    return Floor(f"recorded in the run files (from {', '.join(files) or 'a noise-floor file'})", per, None,
                 max(platforms) if platforms else None)


def from_learned(data: dict[str, Any], source: str) -> Floor:
    """A Floor from a noise-floor file's content (what learn returns), checked (reports/floor_file.py)."""
    try:
        floor_file.check(data, source)
    except floor_file.FloorFileError as exc:
        raise RunFileError(str(exc)) from None
    per = {k: float(v["floor"]) for k, v in data["benchmarks"].items()}
    return Floor(source, per, _fraction(data.get("default")), _fraction(data.get("platform")), data["arch"],
                 data["device_name"])


def load(path: str | Path) -> Floor:
    p = Path(path)
    try:
        data = floor_file.read(p)
    except floor_file.FloorFileError as exc:
        raise RunFileError(str(exc)) from None
    return from_learned(data, f"{p} (learned from {len(data.get('learned_from') or [])} runs on "
                              f"{data.get('device_name')})")


def check_fits(floor: Floor, runs: list[Run]) -> None:
    """A noise-floor file is used only for runs of the arch and device it was learned on."""
    for run in runs:
        why = floor_file.mismatch({"arch": floor.arch, "device_name": floor.device_name}, run.env["arch"],
                                  run.env["device_name"])
        if floor.arch is not None and why:
            raise RunFileError(f"refusing the noise floor {floor.source}: {why} (the device of {run.path}); "
                               f"learn one on this device with `{reports.command()} noise-floor`")


def decisive(m: changes.Moved, platform_kernel: float) -> float:
    """The size of change that compare needs to exceed to call this benchmark changed (see compare.classify)."""
    relative = abs(m.kernel - platform_kernel)
    return relative if m.ratio is None else min(abs(m.ratio), relative)


def learn(runs: list[Run]) -> dict[str, Any]:
    """A noise-floor file's content from runs of identical software on one machine."""
    if len(runs) < 2:
        raise RunFileError("a noise floor needs at least two runs of identical software (A/A runs)")
    first = runs[0]
    for r in runs[1:]:
        differ = [f"{k}: {first.env.get(k)!r} vs {r.env.get(k)!r}" for k in SOFTWARE if first.env.get(k) != r.env.get(k)]
        if differ:
            raise RunFileError(f"{r.path}: not an A/A run of {first.path}: {'; '.join(differ)}")
    largest: dict[str, float] = {}
    seen: dict[str, int] = {}
    platform: list[float] = []
    for a, b in itertools.combinations(runs, 2):
        moved, _, plat = changes.pair(a, b)
        rounds = [m for m in moved if m.method == "rounds" and not m.disturbed]
        if plat["kernel"] is None:
            continue
        shift = plat["torch"] if plat["torch"] is not None else plat["kernel"]
        platform.append(abs(shift))
        for m in rounds:
            largest[m.key] = max(largest.get(m.key, 0.0), decisive(m, plat["kernel"]))
            seen[m.key] = seen.get(m.key, 0) + 1
    if not largest:
        raise RunFileError("no benchmark with timing rounds in both runs of any pair (run files from before rounds "
                           "were recorded, or every measurement disturbed): nothing to learn from")
    usual: dict[str, dict[str, list[float]]] = {}
    for r in runs:
        for rec in r.data["benchmarks"]:
            rounds_ = timing.rounds(rec)
            if rounds_ is None or rounds_.disturbed:
                continue
            u = usual.setdefault(changes.key(rec), {"spread": [], "tail": []})
            u["spread"].append(rounds_.spread)
            tails = [t for t in (timing.tail(rec, "kernel"), timing.tail(rec, "baseline")) if t is not None]
            if tails:
                u["tail"].append(max(tails))
    floors = {k: math.expm1(MARGIN * v) for k, v in largest.items()}
    ordered = sorted(floors.values())
    benchmarks = {k: {"floor": round(floors[k], 5), "largest_change": round(math.expm1(largest[k]), 5),
                      "pairs": seen[k],
                      "spread": round(statistics.median(usual[k]["spread"]), 5) if usual.get(k, {}).get("spread") else None,
                      "tail": round(statistics.median(usual[k]["tail"]), 5) if usual.get(k, {}).get("tail") else None}
                  for k in sorted(floors)}
    return {"format": FORMAT, "arch": first.env["arch"], "device_name": first.env["device_name"],
            "software": {k: first.env.get(k) for k in SOFTWARE},
            "learned_from": [r.run_id for r in runs], "pairs": len(platform), "margin": MARGIN,
            "method": METHOD,
            "platform": round(math.expm1(MARGIN * max(platform)), 5) if platform else None,
            "default": round(ordered[min(len(ordered) - 1, int(DEFAULT_QUANTILE * len(ordered)))], 5),
            "benchmarks": benchmarks}
