"""The shards of one run, read as one run: a run split over N runners (``--shard=I/N``) leaves N run files that say
``"shard": {"index": I, "count": N, "run_id": ...}``. Files with the same shard run id, backend and arch are one run:
their tests, cases, compiles, benchmarks, findings and coverage are added together; a set with a shard missing, given
twice, or disagreeing on N is refused, naming the run and the shard; so is one whose shards are not of one launch
(another CI pipeline, another suite version, started more than 12 hours apart: a shard of another night under a
run id reused by hand), unless --merge-shards asks for it. The merged run's check states are the least of its
shards'."""

from __future__ import annotations

import copy
import json
from collections import Counter
from datetime import datetime, timezone
from typing import Any

from reports.loading import Run, RunFileError

LISTS = ("tests", "cases", "compiles", "benchmarks", "findings", "coverage", "incidents")
COUNTERS = {"autotune": ("hits", "nearest", "misses", "stale", "tuning_benchmarks", "fallback"),
            "gpu_share": ("workers", "oom_retried", "oom_retried_passed", "oom_held", "too_large", "alone_wait_s", "alone_s")}


def shard_key(run: Run) -> tuple[str, str, str] | None:
    """(shard run id, backend, arch) of a shard's file; None for a run file of a whole run."""
    shard = run.data.get("shard")
    if not isinstance(shard, dict):
        return None
    return (str(shard["run_id"]), str(run.env["backend"]), str(run.env["arch"]))


def _what(key: tuple[str, str, str]) -> str:
    run_id, backend, arch = key
    return f"run {run_id} ({backend} {arch})"


def check_set(key: tuple[str, str, str], shards: list[Run], merge_anyway: bool = False) -> list[Run]:
    """The shards of one run in shard order, or RunFileError saying which shard is missing, repeated or odd, or
    which shards are not of one launch (``merge_anyway``, --merge-shards: merged all the same, with a warning)."""
    counts = Counter(r.data["shard"]["count"] for r in shards)
    if len(counts) > 1:
        listed = ", ".join(f"{r.path.name} says {r.data['shard']['index']}/{r.data['shard']['count']}" for r in shards)
        raise RunFileError(f"{_what(key)}: its shard files disagree on the number of shards ({listed}); give the "
                           f"files of one sharded run")
    count = next(iter(counts))
    _same_split(key, shards)
    by_index: dict[int, list[Run]] = {}
    for r in shards:
        by_index.setdefault(r.data["shard"]["index"], []).append(r)
    if beyond := sorted(i for i in by_index if not 1 <= i <= count):
        raise RunFileError(f"{_what(key)}: {by_index[beyond[0]][0].path}: shard {beyond[0]}/{count} is not one of "
                           f"1..{count}")
    if repeated := {i: rs for i, rs in sorted(by_index.items()) if len(rs) > 1}:
        i, rs = next(iter(repeated.items()))
        raise RunFileError(f"{_what(key)}: shard {i}/{count} is given more than once ("
                           f"{', '.join(str(r.path) for r in rs)}); give each shard's run file once (a rerun of a "
                           f"shard: keep the one to report)")
    if missing := [i for i in range(1, count + 1) if i not in by_index]:
        given = ", ".join(f"{i}/{count} ({by_index[i][0].path.name})" for i in sorted(by_index))
        raise RunFileError(f"{_what(key)}: shard{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(f'{i}/{count}' for i in missing)} missing (given: {given}); name every "
                           f"shard's run file")
    ordered = [by_index[i][0] for i in range(1, count + 1)]
    if (why := not_one_launch(ordered)) and not merge_anyway:
        raise RunFileError(f"{_what(key)}: {why}: a shard of another run under the same run id (a --run-id given by "
                           f"hand and reused, a file from another night), not one run's; give the shards of one run, "
                           f"each run its own --run-id, or merge them all the same with {MERGE_OPTION}")
    return ordered


# The shards of one run start together (a CI's jobs of one pipeline, runners started by one script): shards that started
# further apart than this are of other runs under one run id (another night's), unless --merge-shards says otherwise.
SHARD_START_WINDOW_H = 12.0


def _started(run: Run) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(run.data["started"]).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def not_one_launch(shards: list[Run]) -> str | None:
    """Why ``shards`` (one run id, in shard order) are not one run's launch, or None: they come from different CI
    pipelines (the ci_run they record), ran different versions of the suite, or started more than
    SHARD_START_WINDOW_H hours apart."""
    def name(r: Run) -> str:
        return f"{r.data['shard']['index']}/{r.data['shard']['count']} {r.path.name}"

    recorded = [r for r in shards if "ci_run" in r.data["shard"]]  # older files lack it: nothing to compare
    if len({r.data["shard"]["ci_run"] for r in recorded}) > 1:
        return ("its shards come from different CI runs (" + ", ".join(
            f"{name(r)}: {r.data['shard']['ci_run'] or 'no CI'}" for r in recorded) + ")")
    versions = [r for r in shards if r.env.get("suite")]
    if len({r.env["suite"] for r in versions}) > 1:
        return "its shards ran different versions of the suite (" + ", ".join(
            f"{name(r)}: {r.env['suite']}" for r in versions) + ")"
    starts = [(r, _started(r)) for r in shards]
    if any(when is None for _, when in starts):
        return None
    first, last = min(when for _, when in starts), max(when for _, when in starts)
    hours = (last - first).total_seconds() / 3600
    if hours > SHARD_START_WINDOW_H:
        return (f"its shards started {hours:.1f} h apart (" + ", ".join(f"{name(r)} at {r.data['started']}"
                                                                       for r, _ in starts) +
                f"; the shards of one run start within {SHARD_START_WINDOW_H:g} h)")
    return None


SPLIT_FIELDS = {"selection": {"kernels": "--kernels", "keyword": "-k", "markexpr": "-m",
                               "hypothesis_profile": "--hypothesis-profile", "kernel_modules": "kernel modules"},
                "split_by": {"durations": "test durations", "tests_listed": "tests the durations list"}}
NOT_RECORDED = "(not recorded)"


def _split_value(run: Run, part: str, name: str) -> Any:
    record = run.data["shard"].get(part)
    return record.get(name) if isinstance(record, dict) else NOT_RECORDED


def _same_split(key: tuple[str, str, str], shards: list[Run]) -> None:
    """The shards of one run selected the same tests and split them by the same durations, or RunFileError naming
    the difference: else their parts are not one run's (a test on two shards, or on none)."""
    if all("selection" not in r.data["shard"] and "split_by" not in r.data["shard"] for r in shards):
        return  # run files from before shards recorded their selection: nothing to compare
    for part, names in SPLIT_FIELDS.items():
        for name, label in names.items():
            values = {json.dumps(_split_value(r, part, name), sort_keys=True) for r in shards}
            if len(values) > 1:
                said = "; ".join(f"{r.path.name} (shard {r.data['shard']['index']}/{r.data['shard']['count']}): "
                                 f"{_shown(_split_value(r, part, name))}" for r in shards)
                why = ("selected other tests" if part == "selection" else
                       "split by other test durations (a runner without the durations file, or another one, splits "
                       "otherwise)")
                raise RunFileError(f"{_what(key)}: its shards {why}, so their parts are not one run (a test may have "
                                   f"run on two shards or on none): {label} differs: {said}; rerun the shards with one "
                                   f"selection and the same durations file (suite/test_costs.json, SUITE_TEST_COSTS)")


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _merge_memcheck(parts: list[Any]) -> Any:
    dicts = [m for m in parts if isinstance(m, dict)]
    if not dicts:
        return parts[0]
    out = copy.deepcopy(dicts[0])
    kernels: dict[str, dict[str, Any]] = {}
    unchecked: dict[str, Any] = {}
    for m in dicts:
        for kernel, counts in (m.get("kernels") or {}).items():
            mine = kernels.setdefault(kernel, {})
            for k, v in (counts or {}).items():
                mine[k] = mine.get(k, 0) + v if isinstance(v, (int, float)) and not isinstance(v, bool) else v
        unchecked.update(m.get("unchecked") or {})
    out["kernels"], out["unchecked"] = kernels, unchecked
    return out


def _merge_coverage(records: list[Any]) -> list[Any]:
    """One coverage record per kernel x dtype: a split test's parts on different shards each left the coverage of
    their own cases. Counts add up, a path is unexercised only where no shard took it, and the paths found by search
    are those any shard found so."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for rec in records:
        if not isinstance(rec, dict):
            continue
        key = (str(rec.get("kernel")), str(rec.get("dtype")))
        if key not in out:
            out[key] = copy.deepcopy(rec)
            continue
        mine = out[key]
        for field in ("configs", "paths", "configs_not_fitting", "value_classes", "layouts"):
            if field in rec or field in mine:
                total = Counter(mine.get(field) or {})
                total.update(rec.get(field) or {})
                mine[field] = dict(total)
        taken = {p for p, n in mine["paths"].items() if n}
        mine["unexercised"] = sorted((set(mine["unexercised"]) & set(rec["unexercised"])) - taken)
        if "covered_by_search" in rec or "covered_by_search" in mine:
            mine["covered_by_search"] = sorted(set(mine.get("covered_by_search") or []) |
                                               set(rec.get("covered_by_search") or []))
        if "stopped_by" in rec:
            mine.setdefault("stopped_by", rec["stopped_by"])
    return list(out.values())


COMPILE_MATRIX_ORDER = ("defaults", "ci", "full")  # least first


def _merge_checks(shards: list[Run]) -> tuple[dict[str, Any] | None, str | None]:
    """The shards' check states (suite/plugin/hooks.py checks_record) as one run's: the least of each, as the least
    checked shard had it, and what differed; None where a shard records none (its states are not recorded)."""
    parts = [r.data.get("checks") for r in shards]
    if all(p is None for p in parts):
        return None, None
    if any(not isinstance(p, dict) for p in parts):
        return None, "a shard records no check states"
    out = copy.deepcopy(parts[0])
    races = [p.get("races") for p in parts]
    out["races"] = next((r for r in races if r != "on"), "on")
    runs = [p["intermittent_runs"] for p in parts if isinstance(p.get("intermittent_runs"), int)]
    out["intermittent_runs"] = min(runs) if runs else None
    modes = [p.get("compile_matrix") for p in parts]
    out["compile_matrix"] = min(modes, key=lambda m: COMPILE_MATRIX_ORDER.index(m) if m in COMPILE_MATRIX_ORDER else -1)
    out["compile_targets"] = "own" if any(p.get("compile_targets") != "all" for p in parts) else "all"
    for name in ("config", "repro"):
        out[name] = next((p[name] for p in parts if p.get(name) is not None), None)
    differ = sorted({k for p in parts for k in p if json.dumps(p.get(k), sort_keys=True) !=
                     json.dumps(parts[0].get(k), sort_keys=True)})
    return out, (", ".join(differ) if differ else None)


def _sum_counters(parts: list[Any], keys: tuple[str, ...]) -> Any:
    dicts = [p for p in parts if isinstance(p, dict)]
    if not dicts:
        return parts[0]
    out = copy.deepcopy(dicts[0])
    for k in keys:
        values = [d[k] for d in dicts if isinstance(d.get(k), (int, float)) and not isinstance(d.get(k), bool)]
        if values:  # counts, and seconds (gpu_share's waits)
            out[k] = round(sum(values), 3) if any(isinstance(v, float) for v in values) else sum(values)
    for k, v in list(out.items()):  # lists (autotune's entries, the too-large cases): every shard's
        if isinstance(v, list):
            out[k] = [e for d in dicts for e in d.get(k) or []]
    return out


def merge(key: tuple[str, str, str], shards: list[Run]) -> Run:
    """One Run from the checked shards of one run (see check_set)."""
    first = shards[0]
    data = copy.deepcopy(first.data)
    data["run_id"] = key[0]
    for name in LISTS:
        if any(name in r.data for r in shards):
            data[name] = [x for r in shards for x in r.data.get(name) or []]
    data["known_issues"] = list({str(k.get("id")): k for r in shards for k in r.data["known_issues"]}.values())
    statuses = [r.data["status"] for r in shards]
    data["status"] = next((s for s in statuses if s != "complete"), "complete")
    data["started"] = min(r.data["started"] for r in shards)
    finished = [r.data["finished"] for r in shards]
    data["finished"] = None if None in finished else max(finished)
    hosts = list(dict.fromkeys(str(r.env.get("hostname")) for r in shards))
    data["environment"]["hostname"] = ", ".join(hosts)
    if "coverage" in data:
        data["coverage"] = _merge_coverage(data["coverage"])
    data["memcheck"] = _merge_memcheck([r.data.get("memcheck") for r in shards])
    checks, checks_differ = _merge_checks(shards)
    data.pop("checks", None)
    if checks is not None:
        data["checks"] = checks
    for name, keys in COUNTERS.items():
        if name in data:
            data[name] = _sum_counters([r.data.get(name) for r in shards], keys)
    data.pop("timing", None)  # each runner's own timeline: no one run's
    data["shard"] = {"index": 1, "count": 1, "run_id": key[0], "merged_from": [r.path.name for r in shards],
                     **{k: first.data["shard"][k] for k in SPLIT_FIELDS if k in first.data["shard"]}}
    merged = Run(first.path, data, [w for r in shards for w in r.warnings])
    if checks_differ:
        merged.warnings.append(f"{_what(key)}: its shards ran with other check states ({checks_differ}); the merged run "
                               f"has the least of each, as the shard that checked least had it")
    modes = sorted({str((r.data.get("memcheck") or {}).get("mode")) for r in shards})
    if len(modes) > 1:
        merged.warnings.append(f"{_what(key)}: its shards ran with other memory checks ({', '.join(modes)}); each "
                               f"kernel's is the one its shard had")
    software = {(r.env.get("triton"), r.env.get("torch"), r.env.get("driver"), r.env.get("runtime")) for r in shards}
    if len(software) > 1:
        merged.warnings.append(f"{_what(key)}: its {len(shards)} shards ran different software (triton, torch, driver, "
                               f"runtime: {sorted(software, key=str)}); the merged run reports the first shard's")
    return merged


MERGE_OPTION = "--merge-shards"


Key = tuple[str, str, str]


def _other_ids(groups: dict[Key, list[Run]], merge_ids: bool) -> tuple[dict[Key, list[Run]], dict[Key, RunFileError]]:
    """Shard sets a shard short whose missing shards were given under other run ids (shards run by hand without
    --run-id each get a random one): with ``merge_ids`` (--merge-shards) they are one run, named by their ids
    joined with '+'; else RunFileError says so, and how to fix it, instead of 'shard missing'."""
    def short(rs: list[Run]) -> bool:
        return len({r.data["shard"]["index"] for r in rs}) < rs[0].data["shard"]["count"]

    by_platform: dict[tuple[str, str, int], list[Key]] = {}
    for key, rs in groups.items():
        if short(rs) and len({r.data["shard"]["count"] for r in rs}) == 1:
            by_platform.setdefault((key[1], key[2], rs[0].data["shard"]["count"]), []).append(key)
    out, errors = dict(groups), {}
    for (backend, arch, count), keys in by_platform.items():
        if len(keys) < 2:
            continue
        shards = [r for k in keys for r in groups[k]]
        if not {r.data["shard"]["index"] for r in shards} >= set(range(1, count + 1)):
            continue  # together still short: each is named as a shard short
        if merge_ids:
            for k in keys:
                del out[k]
            out[("+".join(sorted(k[0] for k in keys)), backend, arch)] = shards
            continue
        listed = ", ".join(f"{r.data['shard']['index']}/{count} ({r.path.name}) run id {r.data['shard']['run_id']}"
                           for r in sorted(shards, key=lambda r: r.data["shard"]["index"]))
        error = RunFileError(
            f"{backend} {arch}: the shard files given have {len(keys)} different run ids ({listed}): shards run "
            f"without --run-id each get a random one, so they are not one run; rerun every shard with the same "
            f"--run-id=ID (or SUITE_RUN_ID), or merge these files as one run with {MERGE_OPTION}")
        errors.update((k, error) for k in keys)
    return out, errors


def merge_shards(runs: list[Run], merge_ids: bool = False) -> list[Run]:
    """``runs`` with every sharded run's files replaced by one merged run, where its first shard stood; a run file
    of a whole run stays as it is. RunFileError for an incomplete or inconsistent set of shards."""
    merged, bad = merge_some(runs, merge_ids)
    if bad:
        raise bad[0]
    return merged


def merge_some(runs: list[Run], merge_ids: bool = False) -> tuple[list[Run], list[RunFileError]]:
    """As merge_shards, but a run whose set of shards is incomplete or inconsistent is left out, with why (a series
    of nights goes on without the night that lost a shard). ``merge_ids``: shard files of one backend and arch under
    different run ids that together make one whole set are one run (--merge-shards)."""
    groups: dict[tuple[str, str, str], list[Run]] = {}
    for r in runs:
        if (key := shard_key(r)) is not None:
            groups.setdefault(key, []).append(r)
    if not groups:
        return runs, []
    groups, errors = _other_ids(groups, merge_ids)
    where = {id(r): key for key, rs in groups.items() for r in rs}
    merged: dict[tuple[str, str, str], Run | None] = {}
    bad: list[RunFileError] = []
    for key, shards in groups.items():
        if key in errors:  # shards under different run ids: said once for them all
            merged[key] = None
            if errors[key] not in bad:
                bad.append(errors[key])
            continue
        if len(shards) == 1 and shards[0].data["shard"]["count"] == 1:
            merged[key] = shards[0]
            continue
        try:
            ordered = check_set(key, shards, merge_ids)
        except RunFileError as exc:
            merged[key] = None
            bad.append(exc)
            continue
        merged[key] = merge(key, ordered)
        if why := not_one_launch(ordered):  # merged on request all the same (--merge-shards)
            merged[key].warnings.append(f"{_what(key)}: {why}; merged as one run on request ({MERGE_OPTION})")
        if key not in errors and "+" in key[0]:  # run ids never hold '+': joined by --merge-shards
            merged[key].warnings.append(f"{_what(key)}: shard files of different run ids merged as one run on "
                                        f"request ({MERGE_OPTION})")
    out, done = [], set()
    for r in runs:
        key = where.get(id(r))
        if key is None:
            out.append(r)
        elif key not in done:
            done.add(key)
            if merged[key] is not None:
                out.append(merged[key])
    return out, bad
