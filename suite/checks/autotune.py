"""Per-arch autotune caches: configs are tuned once per architecture (``--retune``) and read
by every normal run, which times nothing.

One diffable JSON file per arch, ``hardware_profiles/autotune/<arch>.json``, tuned on the arch's representative
device (hardware_profiles.loader.REPRESENTATIVES: the H100 for sm_90). Another shipped device of the arch (an H200
on sm_90) has its own file, ``<arch>.<profile key>.json`` (``sm_90.h200_sxm.json``): its lookups read that file
first and fall back to the arch's file for a kernel and dtype it holds no valid entry for (counted as
``fallback``), and ``--retune`` on it writes its own file only. An entry is keyed
by kernel, dtype and shape bucket and carries what makes it valid: the kernel's source hash,
the arch, the SM/CU count and the Triton version. A lookup is

- ``hit``: an entry for the case's own bucket, valid for this kernel source, GPU and Triton;
- ``nearest``: no entry for the bucket, but valid entries for the kernel and dtype: the one
  nearest in log2 distance over the bucket's dims (dims with fixed choices must match);
- ``stale``: entries exist but none is valid (source, Triton or SM count changed): the
  family's default config runs, and the summary names the kernels to ``--retune``;
- ``miss``: no entry: the family's default config runs.

A stale entry is never used: its config was timed against other code or another compiler.
An unreadable or foreign cache file is reported (naming the file and what is wrong), the run
goes on with the default configs, and ``--retune`` refuses to overwrite it.
"""

from __future__ import annotations

import datetime
import hashlib
import inspect
import json
import math
import os
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reports.failure_kinds import FailureKind
from suite.session import reading, results, stash
from suite.workers import crash

if TYPE_CHECKING:  # kernels.spec imports torch: an xdist controller loads this module before it may (suite/plugin/context.py)
    from kernels.spec import KernelSpec

CACHE_DIR = Path(__file__).resolve().parents[2] / "hardware_profiles" / "autotune"
SCHEMA = "autotune-cache/1"
ENTRY_FIELDS = {"kernel": str, "dtype": str, "bucket": dict, "shape": dict, "source_hash": str, "arch": str,
                "sm_count": int, "triton": str, "config": dict, "default_config": dict, "tried": list,
                "tuning_run": str}


class CacheError(Exception):
    """An autotune cache file that cannot be used; the message names the file and what is wrong."""


def cache_path(arch: str, directory: Path | str | None = None, profile: str | None = None) -> Path:
    """``<arch>.json``, or a device's own ``<arch>.<profile>.json`` (see :func:`device_profile`)."""
    name = f"{arch}.{profile}.json" if profile else f"{arch}.json"
    return Path(directory or os.environ.get("SUITE_AUTOTUNE_DIR") or CACHE_DIR) / name


def device_profile(backend: Any) -> str | None:
    """The profile key of a device with its own cache file: a shipped profile of an arch other than the arch's
    representative (``h200_sxm`` on sm_90). None for the representative device, a device no shipped profile
    matches (its profile is built at run time), and the interpreter: they use ``<arch>.json``."""
    from hardware_profiles.loader import REPRESENTATIVES

    profile = getattr(backend, "profile", None)
    if backend.name == "interpret" or profile is None or getattr(profile, "detected", False):
        return None
    representative = REPRESENTATIVES.get(backend.arch)
    return None if representative is None or profile.key == representative else profile.key


def source_hash(spec: KernelSpec) -> str:
    """Hash of the source file that defines the kernel's launch (and, for the built-in kernels, its
    @triton.jit function): any edit there makes the kernel's entries stale."""
    files = []
    from kernels.spec import unwrap_jit

    for obj in (spec.run, *(getattr(unwrap_jit(k.fn), "fn", None) for k in spec.jit_kernels())):
        try:
            path = inspect.getsourcefile(obj) if obj is not None else None
        except TypeError:
            path = None
        if path and path not in files:
            files.append(path)
    digest = hashlib.sha256()
    for path in files:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


def bucket_of(spec: KernelSpec, shape: Mapping[str, int]) -> dict[str, int]:
    """The shape bucket: each dim rounded up to a power of two, dims with fixed choices kept exact.
    A spec may define its own (``tune_bucket``)."""
    custom = getattr(spec, "tune_bucket", None)
    if custom is not None:
        return dict(custom(shape))
    fixed = {d.name for d in spec.dims if d.choices}
    return {k: (int(v) if k in fixed else 1 << max(0, int(v) - 1).bit_length()) for k, v in shape.items()}


def entry_key(kernel: str, dtype: str, bucket: Mapping[str, int]) -> str:
    return f"{kernel}/{dtype}/" + ",".join(f"{k}={v}" for k, v in bucket.items())


def _distance(a: Mapping[str, int], b: Mapping[str, int], fixed: set[str]) -> float:
    if set(a) != set(b) or any(a.get(k) != b.get(k) for k in fixed):
        return math.inf
    return sum(abs(math.log2(max(a[k], 1)) - math.log2(max(b[k], 1))) for k in a)


def open_caches(backend: Any, directory: Path | str | None = None) -> tuple[Cache, Cache | None]:
    """(the cache this device reads first and ``--retune`` writes, the arch's file behind it or None)."""
    device = device_profile(backend)
    cache = load(cache_path(backend.arch, directory, device), backend.arch, device)
    return cache, (load(cache_path(backend.arch, directory), backend.arch) if device else None)


@dataclass
class Cache:
    path: Path
    arch: str
    profile: str | None = None  # a device's own file: the profile it was tuned on; None: the arch's file
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    tuning_runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    status: str = "absent"  # ok | absent | unreadable
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        used = {e["tuning_run"] for e in self.entries.values()}
        return {"schema": SCHEMA, "arch": self.arch, **({"profile": self.profile} if self.profile else {}),
                "tuning_runs": {k: v for k, v in sorted(self.tuning_runs.items()) if k in used},
                "entries": dict(sorted(self.entries.items()))}


def load(path: Path, arch: str, profile: str | None = None) -> Cache:
    """The cache for ``arch`` (a device's own, for ``profile``) at ``path``: absent, ok, or unreadable with the
    reason (never raises)."""
    cache = Cache(path, arch, profile)
    if not path.exists():
        return cache
    try:
        cache.entries, cache.tuning_runs = parse(path, arch, profile)
        cache.status = "ok"
    except CacheError as exc:
        cache.status, cache.error = "unreadable", str(exc)
    return cache


# The largest autotune cache read (the shipped sm_90.json is about 100 KiB).
MOST_BYTES = 64 * 2**20


def parse(path: Path, arch: str, profile: str | None = None) -> tuple[dict[str, dict], dict[str, dict]]:
    """Entries and tuning runs of a cache file; CacheError naming the file and the bad part."""
    try:
        data = json.loads(reading.read_regular(path, MOST_BYTES).decode("utf-8"))
    except reading.NotAFile as exc:  # a FIFO hung the run, /dev/zero was read until it was killed
        raise CacheError(f"{path}: not an autotune cache: {exc}") from None
    except UnicodeDecodeError as exc:
        raise CacheError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise CacheError(f"{path}: not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise CacheError(f"{path}: nested too deeply to read; not an autotune cache") from None
    except OSError as exc:
        raise CacheError(f"{path}: cannot be read ({exc.strerror})") from None
    if not isinstance(data, dict):
        raise CacheError(f"{path}: expected a JSON object with 'schema', 'arch' and 'entries', got {type(data).__name__}")
    if data.get("schema") != SCHEMA:
        raise CacheError(f"{path}: schema is {data.get('schema')!r}, this suite reads {SCHEMA!r} (not an autotune "
                         f"cache of this suite, or from another version of it)")
    if data.get("arch") != arch:
        raise CacheError(f"{path}: a cache for arch {data.get('arch')!r}, not for this GPU's {arch!r} (foreign file: "
                         f"cache files are named after the arch they hold)")
    if data.get("profile") != profile:
        held = f"the {data['profile']} device's own cache" if data.get("profile") else f"the {arch} arch's cache"
        wanted = f"the {profile} device's own" if profile else f"the {arch} arch's"
        raise CacheError(f"{path}: {held}, where this GPU reads {wanted} (foreign file: a device's own cache is "
                         f"named <arch>.<profile>.json and says its profile)")
    entries, runs = data.get("entries"), data.get("tuning_runs", {})
    if not isinstance(entries, dict) or not isinstance(runs, dict):
        raise CacheError(f"{path}: 'entries' and 'tuning_runs' must be JSON objects")
    for key, entry in entries.items():
        if not isinstance(entry, dict):
            raise CacheError(f"{path}: entry {key!r} is not a JSON object")
        for name, kind in ENTRY_FIELDS.items():
            if not isinstance(entry.get(name), kind) or (kind is int and isinstance(entry.get(name), bool)):
                raise CacheError(f"{path}: entry {key!r}: field {name!r} missing or not {kind.__name__}")
        for part in ("bucket", "shape"):
            bad = [k for k, v in entry[part].items() if not isinstance(v, int) or isinstance(v, bool)]
            if bad:
                raise CacheError(f"{path}: entry {key!r}: {part} value(s) {bad} are not integers")
        if entry["arch"] != arch:
            raise CacheError(f"{path}: entry {key!r} is for arch {entry['arch']!r}, the file for {arch!r}")
        if key != entry_key(entry["kernel"], entry["dtype"], entry["bucket"]):
            raise CacheError(f"{path}: entry {key!r} does not match its kernel/dtype/bucket fields "
                             f"({entry_key(entry['kernel'], entry['dtype'], entry['bucket'])!r})")
    return entries, runs


def write(cache: Cache) -> None:
    """Atomically (temporary file + rename): a crash leaves the old file or the new one."""
    if cache.status == "unreadable":
        raise CacheError(f"refusing to overwrite the unreadable cache {cache.path}: {cache.error}; move it away first")
    results.write_atomic(cache.path, json.dumps(cache.as_json(), indent=1, sort_keys=False) + "\n")
    cache.status = "ok"


class Lookup:
    """A process's view of the cache: config choice per case, counted by result."""

    def __init__(self, backend: Any, cache: Cache | None, fallback: Cache | None = None) -> None:
        self.backend = backend
        self.cache = cache
        self.fallback = fallback  # the arch's file, behind a device's own (None: no device file in play)
        self.counts: Counter[str] = Counter()
        self.stale: dict[str, str] = {}  # kernel -> why
        self._hashes: dict[int, str] = {}
        self.tuning_benchmarks = 0
        self.fallback_lookups = 0  # hits and nearest hits answered by the fallback file

    def source_hash(self, spec: KernelSpec) -> str:
        if id(spec) not in self._hashes:
            self._hashes[id(spec)] = source_hash(spec)
        return self._hashes[id(spec)]

    def why_stale(self, spec: KernelSpec, entry: Mapping[str, Any]) -> str | None:
        import triton

        if entry["source_hash"] != self.source_hash(spec):
            return "kernel source changed since tuning"
        if entry["triton"] != triton.__version__:
            return f"tuned with Triton {entry['triton']}, running {triton.__version__}"
        if entry["sm_count"] != self.backend.sm_count:
            return f"tuned on {entry['sm_count']} SMs/CUs, this GPU has {self.backend.sm_count}"
        return None

    def choose(self, spec: KernelSpec, dtype: str, shape: Mapping[str, int]) -> tuple[dict[str, Any], str, str | None]:
        """(config, how, entry key): see the module docstring for ``how``."""
        return self._choose(spec, dtype, shape)[:3]

    def _choose(self, spec: KernelSpec, dtype: str,
                shape: Mapping[str, int]) -> tuple[dict[str, Any], str, str | None, bool]:
        """:meth:`choose`, and whether the answer came from the fallback file."""
        default = spec.default_config_for(self.backend.family)
        caches = [c for c in (self.cache, self.fallback) if c is not None and c.status == "ok"]
        bucket = bucket_of(spec, shape)
        fixed = {d.name for d in spec.dims if d.choices}
        stale_seen = None
        for cache in caches:
            fresh, stale = [], []
            for key, entry in cache.entries.items():
                if entry["kernel"] != spec.name or entry["dtype"] != dtype:
                    continue
                why = self.why_stale(spec, entry)
                (stale if why else fresh).append((key, entry, why))
            from_fallback = cache is self.fallback
            exact = [f for f in fresh if f[1]["bucket"] == bucket]
            if exact:
                return dict(exact[0][1]["config"]), "hit", exact[0][0], from_fallback
            near = sorted(((_distance(bucket, e["bucket"], fixed), k, e) for k, e, _ in fresh),
                          key=lambda t: (t[0], t[1]))
            if near and near[0][0] < math.inf:
                return dict(near[0][2]["config"]), "nearest", near[0][1], from_fallback
            stale_seen = stale_seen or (stale[0] if stale else None)
        if stale_seen:
            self.stale.setdefault(spec.name, stale_seen[2])
            return default, "stale", stale_seen[0], False
        return default, "miss", None, False

    def resolve(self, spec: KernelSpec, dtype: str, shape: Mapping[str, int]) -> tuple[dict[str, Any], str, str | None]:
        """:meth:`choose`, counted."""
        config, how, key, from_fallback = self._choose(spec, dtype, shape)
        self.counts[how] += 1
        self.fallback_lookups += from_fallback
        return config, how, key

    def take(self) -> dict[str, Any] | None:
        """The counts since the last call (a test's share, sent to the controller), or None."""
        if not self.counts and not self.stale and not self.tuning_benchmarks:
            return None
        out = {"lookups": dict(self.counts), "stale_kernels": dict(self.stale), "tuning_benchmarks": self.tuning_benchmarks,
               "fallback": self.fallback_lookups}
        self.counts.clear()
        self.stale.clear()
        self.tuning_benchmarks = 0
        self.fallback_lookups = 0
        return out


def activate(lookup: Lookup | None) -> None:
    """The run's lookup from now on (kept in the session's state, suite/session/stash.py)."""
    stash.session().lookup = lookup


def active() -> Lookup | None:
    return stash.session().lookup


def choose_config(spec: KernelSpec, dtype: str, shape: Mapping[str, int], backend: Any) -> dict[str, Any]:
    """The config a normal run uses: the cache's (counted) where a cache is active, else the family default."""
    lookup = active()
    if lookup is not None:
        return lookup.resolve(spec, dtype, shape)[0]
    return spec.default_config_for(backend.family)


# --- counting every do_bench call: a normal run must time nothing -------------------------------

class purpose:
    """``with purpose("benchmark"):`` do_bench calls inside are benchmarks, not tuning (what a call is for is kept
    in the session's state, ``purposes``: anything not declared counts as tuning)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        stash.session().purposes.append(self.name)

    def __exit__(self, *exc: object) -> None:
        stash.session().purposes.pop()


def count_do_bench() -> None:
    """Wrap triton.testing.do_bench (once per process) so that every call outside a declared
    benchmark counts as a tuning benchmark of the active lookup."""
    import triton.testing

    from suite import compat

    compat.require("do-bench-counting")
    if getattr(triton.testing.do_bench, "_suite_counted", False):
        return
    original = triton.testing.do_bench

    def counted(*args: Any, **kwargs: Any) -> Any:
        lookup = active()
        if stash.session().purposes[-1] != "benchmark" and lookup is not None:
            lookup.tuning_benchmarks += 1
        return original(*args, **kwargs)

    counted._suite_counted = True  # type: ignore[attr-defined]
    counted.__wrapped__ = original  # type: ignore[attr-defined]
    triton.testing.do_bench = counted


# --- tuning ----------------------------------------------------------------------------------------


def candidates(spec: KernelSpec, family: str) -> list[dict[str, Any]]:
    """The family's config space with the default first; a config carrying the other vendor's
    options is refused (it would raise at launch)."""
    from kernels.spec import VENDOR_ONLY_OPTIONS

    default = spec.default_config_for(family)
    out = [default] if default else []
    for cfg in spec.configs.get(family, ()):
        if dict(cfg) not in out:
            out.append(dict(cfg))
    other = "amd" if family == "nvidia" else "nvidia" if family == "amd" else None
    for cfg in out:
        foreign = sorted(set(cfg) & set(VENDOR_ONLY_OPTIONS.get(other, ())))
        if foreign:
            raise ValueError(f"{spec.name}: a {family} config carries {other}-only option(s) {foreign}: {cfg}")
    return out


def prune_reason(record: Mapping[str, Any]) -> str | None:
    """Why a compile-matrix record rules a config out of tuning, or None."""
    if record.get("status") == "failed":
        return f"compile matrix: {record.get('failure_class')}: {str(record.get('error'))[:200]}"
    if record.get("spills"):
        return "compile matrix: spills registers"
    return None


def tuning_run_record(backend: Any) -> dict[str, Any]:
    import platform

    import torch
    import triton

    return {"device_name": backend.device_name, "arch": backend.arch, "sm_count": backend.sm_count,
            "driver": backend.details.get("driver"), "torch": torch.__version__, "triton": triton.__version__,
            "cuda": torch.version.cuda, "hip": getattr(torch.version, "hip", None), "host": platform.node(),
            "python": platform.python_version()}


def retune(specs: Iterable[KernelSpec], backend: Any, cache: Cache, *,
           time_config: Callable[[KernelSpec, str, Mapping[str, int], dict], list[float]],
           compile_record: Callable[[KernelSpec, str, dict], Mapping[str, Any]] | None = None,
           progress: Callable[[str], None] = print, failed: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Time every valid config of each kernel x supported dtype x benchmark shape and store the fastest. ``failed``
    collects each kernel x dtype x shape of which no config ran (the gate flags its cached winner).

    ``time_config(spec, dtype, shape, config)`` returns timing samples in ms (raises on a launch
    failure); ``compile_record(spec, dtype, config)`` is the compile matrix's record for this arch
    (pruning). The cache file is rewritten after each kernel, so a crash keeps finished work.
    Returns the new entries."""
    if cache.status == "unreadable":
        raise CacheError(f"refusing to overwrite the unreadable cache {cache.path}: {cache.error}; move it away first")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    run_id = f"{stamp}-{backend.arch}"
    cache.tuning_runs[run_id] = {**tuning_run_record(backend), "tuned_at": stamp}
    work = [(spec, dtype, dict(shape)) for spec in specs for dtype in spec.dtypes if backend.supports(dtype)
            for shape in spec.benchmark_shapes]
    new: list[dict[str, Any]] = []
    for i, (spec, dtype, shape) in enumerate(work, 1):
        try:
            entry = _tune_one(spec, dtype, shape, backend, i, len(work), run_id, time_config, compile_record, progress)
        except BaseException:
            write(cache)  # keep what finished before a poisoned context or an interrupt
            raise
        if entry is not None:
            cache.entries[entry_key(spec.name, dtype, entry["bucket"])] = entry
            new.append(entry)
        elif failed is not None:
            failed.append({"kernel": spec.name, "dtype": dtype, "bucket": bucket_of(spec, shape), "shape": shape})
        if i == len(work) or work[i][0] is not spec:  # the kernel's last item: save, whatever happened
            write(cache)
    return new


def _positive_finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def timing_of(samples: list[float]) -> dict[str, Any]:
    """An entry's record of one config's samples: median, interquartile range, count."""
    med = statistics.median(samples)
    q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [med, med, med]
    return {"median_ms": round(med, 6), "iqr_ms": round(q[2] - q[0], 6), "samples": len(samples)}


def disturbed(timed: list[dict]) -> list[dict]:
    """Timings whose spread (IQR over median) is more than 5% and over four times the typical spread of the
    configs tried beside them: a measurement disturbed by something else on the machine, which would make a
    config look slow (and the tuned one look faster than the default than it is)."""
    rel = [t["iqr_ms"] / t["median_ms"] for t in timed if t["median_ms"] > 0]
    if len(rel) < 3:
        return []
    typical = statistics.median(rel)
    return [t for t in timed if t["median_ms"] > 0 and t["iqr_ms"] / t["median_ms"] > max(0.05, 4 * typical)]


def _tune_one(spec: KernelSpec, dtype: str, shape: dict[str, int], backend: Any, i: int, n: int, run_id: str,
              time_config: Callable, compile_record: Callable | None, progress: Callable[[str], None]) -> dict | None:
    """Time every candidate config for one kernel x dtype x shape; the cache entry, or None if none ran."""
    import triton

    from kernels.spec import Case

    configs = candidates(spec, backend.family)
    default = configs[0] if configs else {}
    label = f"[{i}/{n}] {spec.name} {dtype} {','.join(f'{k}={v}' for k, v in shape.items())}"
    tried = []
    for j, cfg in enumerate(configs, 1):
        why = prune_reason(compile_record(spec, dtype, cfg)) if compile_record else None
        if why:
            tried.append({"config": cfg, "status": "pruned", "reason": why})
            progress(f"autotune {label}: config {j}/{len(configs)} pruned: {why[:160]}")
            continue
        try:
            with crash.watchdog(Case(spec.name, dtype, dict(shape))):
                samples = time_config(spec, dtype, shape, cfg)
        except Exception as exc:  # noqa: BLE001 - a config that fails to launch is a result
            reason = f"{type(exc).__name__}: {exc}"[:300]
            if crash.classify(exc, getattr(backend, "device", "cpu")) == FailureKind.FAULT:
                raise CacheError(f"retune stopped: {spec.name} {dtype} config {cfg} faulted ({reason}); the GPU "
                                 f"context is unusable. Entries finished before it were written; drop that config "
                                 f"from the spec's config space and retune") from None
            tried.append({"config": cfg, "status": "error", "reason": reason})
            progress(f"autotune {label}: config {j}/{len(configs)} failed: {reason[:160]}")
            continue
        timed_now = timing_of(samples)
        if not _positive_finite(timed_now["median_ms"]):  # a timer that measured nothing: never a winner
            reason = (f"timed {timed_now['median_ms']} ms: not a positive, finite time (the timer measured nothing; "
                      f"check the GPU's event timer)")
            tried.append({"config": cfg, "status": "invalid", "reason": reason, **timed_now})
            progress(f"autotune {label}: config {j}/{len(configs)} {reason}")
            continue
        tried.append({"config": cfg, "status": "ok", **timed_now})
        progress(f"autotune {label}: config {j}/{len(configs)} {tried[-1]['median_ms']:.4f} ms")
    timed = [t for t in tried if t["status"] == "ok"]
    for t in disturbed(timed):  # measured while something else ran: once more, keeping the steadier measurement
        again = timing_of(time_config(spec, dtype, shape, t["config"]))
        progress(f"autotune {label}: config {t['config']} re-measured (spread {t['iqr_ms']:.4f} ms at "
                 f"{t['median_ms']:.4f} ms): {again['median_ms']:.4f} ms")
        if again["iqr_ms"] < t["iqr_ms"]:
            t.update(again)
        t["remeasured"] = True
    if not timed:
        reasons = "; ".join(sorted({t["reason"][:160] for t in tried}))
        progress(f"autotune {label}: no config ran ({reasons}); entry not written")
        return None
    best = min(timed, key=lambda t: t["median_ms"])
    base = next((t for t in timed if t["config"] == default), None)
    entry = {"kernel": spec.name, "dtype": dtype, "bucket": bucket_of(spec, shape), "shape": shape,
             "source_hash": source_hash(spec), "arch": backend.arch, "sm_count": backend.sm_count,
             "triton": triton.__version__, "config": best["config"], "default_config": default,
             "speedup_vs_default": round(base["median_ms"] / best["median_ms"], 4) if base else None,
             "tried": tried, "tuning_run": run_id}
    progress(f"autotune {label}: chose {best['config']} ({best['median_ms']:.4f} ms"
             + (f", {entry['speedup_vs_default']:.3f}x the default)" if base else ", default did not run)"))
    return entry


def retune_rows(entries: Iterable[Mapping[str, Any]]) -> list[list[Any]]:
    """Summary rows: kernel, dtype, shape, default ms, tuned ms, speed-up over the default."""
    rows = []
    for e in entries:
        best = min((t for t in e["tried"] if t["status"] == "ok"), key=lambda t: t["median_ms"])
        base = next((t for t in e["tried"] if t["status"] == "ok" and t["config"] == e["default_config"]), None)
        rows.append([e["kernel"], e["dtype"], ",".join(f"{k}={v}" for k, v in e["shape"].items()),
                     f"{base['median_ms']:.4f}" if base else "-", f"{best['median_ms']:.4f}",
                     f"{e['speedup_vs_default']:.3f}" if e.get("speedup_vs_default") else "-",
                     sum(t["status"] == "pruned" for t in e["tried"])])
    return rows


RETUNE_HEADERS = ["kernel", "dtype", "shape", "default ms", "tuned ms", "tuned vs default", "pruned"]



def gate_records(shipped: Cache, timed: Iterable[Mapping[str, Any]],
                 failed: Iterable[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """For each freshly timed entry (``retune`` into a copy) whose key the shipped cache holds: the cached config's
    time and the fastest config's, the loss (cached / fastest) and whether it loses (reports/gate.py). A cached
    config that no longer runs (it fails or is pruned now) loses; so does one timed as no positive, finite time, and
    the cached winner of each kernel x dtype x shape in ``failed`` (no config of it ran: not dropped)."""
    from reports import gate  # the rule (standard library only; imported here: a copy of the suite may lack reports/)
    out = []
    for f in failed:
        cached = shipped.entries.get(entry_key(f["kernel"], f["dtype"], f["bucket"]))
        if cached is not None:
            out.append({"kernel": f["kernel"], "dtype": f["dtype"], "shape": dict(f["shape"]),
                        "cached_config": cached["config"], "cached_triton": cached.get("triton"), "best_config": None,
                        "best_ms": None, "best_iqr_ms": None, "cached_ms": None, "cached_iqr_ms": None, "loss": None,
                        "loses": True, "why": "no config ran on this toolchain (every one failed, was pruned or "
                                              "timed no valid time): the kernel cannot run this shape"})
    for e in timed:
        key = entry_key(e["kernel"], e["dtype"], e["bucket"])
        cached = shipped.entries.get(key)
        if cached is None:
            continue
        ok = [t for t in e["tried"] if t["status"] == "ok" and gate.valid_ms(t["median_ms"])]
        if not ok:
            out.extend(gate_records(shipped, [], [e]))
            continue
        best = min(ok, key=lambda t: t["median_ms"])
        mine = next((t for t in e["tried"] if t["config"] == cached["config"]), None)
        rec = {"kernel": e["kernel"], "dtype": e["dtype"], "shape": dict(e["shape"]),
               "cached_config": cached["config"], "cached_triton": cached.get("triton"),
               "best_config": best["config"], "best_ms": best["median_ms"], "best_iqr_ms": best["iqr_ms"]}
        if mine is not None and mine["status"] == "ok" and not gate.valid_ms(mine["median_ms"]):
            mine = {**mine, "status": "invalid", "reason": f"timed {mine['median_ms']} ms: not a positive, finite time"}
        if mine is None or mine["status"] != "ok":
            why = "not among the configs now" if mine is None else f"{mine['status']}: {mine.get('reason', '')}"[:300]
            rec.update(cached_ms=None, cached_iqr_ms=None, loss=None, loses=True, why=f"the cached config {why}")
        else:
            loses = gate.loses(mine, best)
            rec.update(cached_ms=mine["median_ms"], cached_iqr_ms=mine["iqr_ms"],
                       loss=round(mine["median_ms"] / best["median_ms"], 4) if best["median_ms"] > 0 else None,
                       loses=loses, why=None)
        out.append(rec)
    return out

