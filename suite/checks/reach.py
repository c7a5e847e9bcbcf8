"""Reach: the configs each case runs under, and the declared code paths the cases take.

**Config-differential runs.** A case runs with its own config (the autotune cache's, or the family default) and,
on the same inputs and against the same reference, with other configs of the kernel's family: one more for every
other case, picked from the family's config space by the case itself (so a run is reproducible), or all of them
on a GPU in the nightly profile. Every config must agree with the reference; a case that fails names the config. On the
interpreter the family's space is ``configs["interpret"]`` (small blocks, small groups), else NVIDIA's.

**Every config at least once.** A config the sampled cases never ran (three of eight, in an autotuned kernel's
ci run) runs, after the drawn cases, on the largest case the test passed (:func:`configs_never_run`).

**Every value class and layout at least once.** A declared value class (of those the backend draws for the dtype)
or layout that the drawn cases never took (Hypothesis may draw 20 cases of five classes and miss one) runs, after the
drawn cases, on the smallest case the test passed with that class or layout in place of its own (the strategy draws
them independently of the shape; :func:`find_classes_never_drawn`): a flush of subnormal inputs cannot pass because
no subnormal case happened to be drawn.

**Paths.** A spec declares the paths that only some shapes and configs take (``KernelSpec.paths``). Each case run
counts the paths it took; a path that the drawn cases missed is searched for (the smallest case the dims allow
that takes it with one of the family's configs) and that case runs too. A path no allowed case and config takes
fails the test: the spec promises a path the suite cannot reach.
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from kernels.spec import Case, CodePath, KernelSpec
from suite.checks import spec_code

COVERAGE_PROPERTY = "suite_coverage_records"


def config_space(spec: KernelSpec, family: str) -> list[dict[str, Any]]:
    """The configs a case may also run under: the family's, the interpreter's own or else NVIDIA's."""
    space = spec.configs.get(family) or (spec.configs.get("nvidia", ()) if family == "interpret" else ())
    return [dict(c) for c in space]


def extra_configs(spec: KernelSpec, case: Case, family: str, primary: Mapping[str, Any], every: bool) -> list[dict]:
    """The other configs ``case`` runs under: all of the family's (``every``); else, for every other case (chosen by
    the case itself, so a rerun runs the same), one config. On the interpreter the case picks it (launches are what
    cost there); on a GPU the kernel and dtype pick one for the whole test, which is compiled once (compiles are
    what cost there)."""
    pool = [c for c in config_space(spec, family) if c != dict(primary)]
    if every or not pool:
        return pool
    pick = zlib.crc32(f"{case.dtype};{case.spec_string()}".encode())
    if pick % 2:
        return []
    if family != "interpret":
        pick = zlib.crc32(f"{spec.name};{case.dtype}".encode()) << 1
    return [pool[(pick >> 1) % len(pool)]]


def configs_never_run(spec: KernelSpec, family: str, coverage: Coverage) -> list[dict[str, Any]]:
    """The configs of the family's space that no case of the test ran (``coverage``), to run once each on a case the
    test passed: every config runs at least once per kernel x dtype test. On the interpreter every kernel's (its
    ``configs["interpret"]`` are small by design: docs/checks.md); on a GPU an ``@triton.autotune`` kernel's, whose
    every config the autotuner may pick at run time (other kernels' configs there are compiled per config, and the
    nightly profile runs them all)."""
    from kernels.spec import is_autotuned

    if family != "interpret" and not any(is_autotuned(k.fn) for k in spec.jit_kernels()):
        return []
    return [c for c in config_space(spec, family) if key(c) not in coverage.configs]


def key(config: Mapping[str, Any]) -> str:
    return json.dumps(dict(config), sort_keys=True, separators=(",", ":"))


def taken(path: CodePath, case: Case, config: Mapping[str, Any], spec: Any = "?") -> bool:
    """Whether ``case`` with ``config`` takes ``path``; spec_code.SpecRaised, naming the path, where ``taken`` raises
    anything but the errors of a config without the path's parameter (``spec``: the spec or its name)."""
    try:
        return bool(path.taken(case, config))
    except (KeyError, ZeroDivisionError, TypeError, ValueError):  # a config without the path's parameter
        return False
    except Exception as exc:  # noqa: BLE001 - the spec's code: named in one line (suite/checks/spec_code.py)
        message = spec_code.describe(spec, f"CodePath {path.name!r}.taken", exc)
        raise spec_code.SpecRaised(message) from None


class Coverage:
    """The configs run and paths taken in one kernel x dtype test."""

    def __init__(self, spec: KernelSpec, dtype: str, family: str | None = None) -> None:
        self.spec, self.dtype = spec, dtype
        # Paths that do not exist for this dtype on this family (CodePath.applies) are neither counted nor searched.
        self.declared = [p for p in spec.paths if p.applies_to(dtype, family)]
        self.configs: Counter[str] = Counter()
        self.paths: Counter[str] = Counter({p.name: 0 for p in self.declared})
        self.searched: list[str] = []
        self.unreachable: list[str] = []
        self.not_fitting: Counter[str] = Counter()
        self.values: Counter[str] = Counter()  # value class -> how many cases drew it
        self.layouts: Counter[str] = Counter()  # layout -> how many cases drew it
        self.restrides: Counter[str] = Counter()  # restride -> how many cases met it (suite/checks/restride.py)
        # Path -> what it ran with: "layout=L", "values=V", "restride=R" (R "none": as make_inputs built them).
        self.crossed: dict[str, set[str]] = {p.name: set() for p in self.declared}
        # Path -> the passed case that took it which the crossings rerun, and its config: the least by _rank, so that
        # which one does not hang on the order the cases came in (a split test's parts merge theirs: taker_state).
        self.taker: dict[str, tuple[Case, dict]] = {}
        self.not_met: dict[str, str] = {}  # a default layout or value class no case met -> why
        self.contract: dict[str, str] | None = None  # the undeclared layout tried once, and what the launcher did
        # Why the test stopped before its cases could take the paths (a known issue's first failing case), if it did.
        self.stopped_by: str | None = None
        # Autotuned kernels whose configs no case named: each ran only its first config (name -> how many it has).
        self.untuned: dict[str, int] = {}

    def add(self, case: Case, configs: Sequence[Mapping[str, Any]], not_fitting: Sequence[str] = (),
            restrided: Sequence[str] = ()) -> None:
        for why in not_fitting:
            self.not_fitting[why.split(" (")[0]] += 1
        self.values[case.values] += 1
        self.layouts[case.layout] += 1
        met = case.restride if restrided else ""
        if met:
            self.restrides[met] += 1
        for config in configs:
            self.configs[key(config)] += 1
            for path in self.declared:
                if taken(path, case, config, self.spec):
                    self.paths[path.name] += 1
                    self.crossed.setdefault(path.name, set()).update(
                        (f"layout={case.layout}", f"values={case.values}", f"restride={met or 'none'}"))
                    self.offer_taker(path.name, case, config)

    def offer_taker(self, path: str, case: Case, config: Mapping[str, Any]) -> None:
        """``case`` with ``config`` took ``path`` and passed: the path's taker where it ranks before the one held."""
        if path not in self.taker or _rank(case, config) < _rank(*self.taker[path]):
            self.taker[path] = (case, dict(config))

    def taker_state(self) -> dict[str, dict[str, Any]]:
        """The takers as JSON (a split test's part leaves them for the last part: suite/workers/parts.py)."""
        return {p: {"case": c.as_record(), "config": dict(cfg)} for p, (c, cfg) in self.taker.items()}

    def merge_takers(self, state: Mapping[str, Any]) -> None:
        """Another part's takers (``taker_state``): each path keeps the one of least rank, as the whole test would."""
        for path, held in state.items():
            rec = held["case"]
            case = Case(kernel=rec["kernel"], dtype=rec["dtype"], shape=dict(rec["shape"]), layout=rec["layout"],
                        values=rec["values"], seed=int(rec["seed"]), restride=rec.get("restride", ""))
            self.offer_taker(path, case, held["config"])

    def uncrossed(self, wanted: Sequence[str]) -> dict[str, list[str]]:
        """Declared path -> each of ``wanted`` ("layout=L", "values=V", "restride=R") no passed case ran it with."""
        out = {}
        for path in self.declared:
            missing = [w for w in wanted if w not in self.crossed.get(path.name, set())]
            if missing and path.name in self.taker:  # a path no passed case took has nothing to rerun
                out[path.name] = missing
        return out

    def missing(self) -> list[CodePath]:
        return [p for p in self.declared if not self.paths[p.name]]

    def record(self) -> dict[str, Any]:
        return {"kernel": self.spec.name, "dtype": self.dtype, "configs": dict(self.configs), "paths": dict(self.paths),
                "covered_by_search": list(self.searched), "unexercised": [p.name for p in self.missing()],
                "configs_not_fitting": dict(self.not_fitting), "value_classes": dict(self.values),
                "layouts": dict(self.layouts), **({"stopped_by": self.stopped_by} if self.stopped_by else {}),
                "restrides": dict(self.restrides), "crossed": {p: sorted(c) for p, c in self.crossed.items()},
                **({"not_met": dict(self.not_met)} if self.not_met else {}),
                **({"contract": dict(self.contract)} if self.contract else {}),
                **({"untuned": dict(self.untuned)} if self.untuned else {})}


def _order(case: Case) -> tuple[bool, int]:
    """Which case of a path the crossings rerun: the smallest whose every dim is at least 2 (a dim of 1 leaves a
    row stride unread: one row), else the smallest."""
    return (min(case.shape.values(), default=2) < 2, sum(case.shape.values()))


def _rank(case: Case, config: Mapping[str, Any]) -> tuple[bool, int, str, str]:
    """Which taker of a path the crossings rerun: by ``_order``, then by the case and config themselves (never by
    when they ran), so that a split test's last part picks from every part's takers the one the whole test picks."""
    return (*_order(case), case.spec_string(), key(config))


def find_classes_never_drawn(strategy: Any, coverage: Coverage, value_classes: Sequence[str],
                             layouts: Sequence[str], base: Case | None = None) -> list[tuple[str, Case]]:
    """For each of ``value_classes`` and ``layouts`` no case of the test drew (``coverage``), a case with it, labelled
    ``values=NAME`` or ``layout=NAME`` (the label ``covered_by_search`` records): ``base`` (a case the test passed,
    the smallest) with that class or layout, which the strategy draws independently of the shape, so the kernel
    variant it compiled serves again; without one, the smallest case ``strategy`` gives with it. A class or layout
    the strategy never gives is left out (the strategy decides what a dtype may draw)."""
    wanted = [(f"values={v}", "values", v) for v in value_classes if not coverage.values[v]]
    wanted += [(f"layout={lay}", "layout", lay) for lay in layouts if not coverage.layouts[lay]]
    found = []
    for label, field, name in wanted:
        if base is not None:
            case: Case | None = dataclasses.replace(base, **{field: name})
        else:
            case = _smallest(strategy, lambda c, field=field, name=name: getattr(c, field) == name)
        if case is not None:
            found.append((label, case))
    return found


def _smallest(strategy: Any, predicate: Any) -> Case | None:
    """The smallest case ``strategy`` gives for which ``predicate`` holds (Hypothesis's find, quiet and
    derandomized), or None."""
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis.errors import NoSuchExample

    quiet = settings(max_examples=1000, database=None, derandomize=True, deadline=None,
                     phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))
    try:
        return find(strategy, predicate, settings=quiet)
    except NoSuchExample:
        return None


def find_case(strategy: Any, path: CodePath, configs: Sequence[Mapping[str, Any]],
              spec: Any = "?") -> tuple[Case, dict] | None:
    """The smallest case ``strategy`` allows that takes ``path`` with one of ``configs``, and that config."""

    def takes(case: Case) -> bool:
        return any(taken(path, case, c, spec) for c in configs)

    case = _smallest(strategy, takes)
    if case is None:
        return None
    return case, dict(next(c for c in configs if taken(path, case, c, spec)))


def crossing_cases(strategy: Any, coverage: Coverage, wanted: Sequence[str]) -> list[tuple[str, Case, dict]]:
    """Cases that run each declared path with each of ``wanted`` ("layout=L", "values=V", "restride=R") it has not
    run with, labelled ``PATH:what``: the path's taker (the least passed case that took it, ``_rank``), with one
    missing layout, one missing value class and one missing restride at once in its place; where the path's ``taken``
    then no longer holds (a path of some layouts only), the layout is left out (the path's ``taken`` says it is not
    taken in that layout) and the rest still runs. A path whose case has a dim of 1 (one row: no row stride read) is
    searched for in ``strategy`` with every dim at least 2, and its restrides run there."""
    import dataclasses
    from itertools import zip_longest

    found = []
    for name, missing in coverage.uncrossed(wanted).items():
        path = next(p for p in coverage.declared if p.name == name)
        base, config = coverage.taker[name]
        if _order(base)[0]:  # a dim of 1: the path on a strided operand needs rows, searched for (every dim >= 2)
            def rows(c: Case, path: CodePath = path, cfg: dict = config) -> bool:
                return not _order(c)[0] and taken(path, c, cfg, coverage.spec)

            hit = _smallest(strategy, rows)
            if hit is not None:
                base = dataclasses.replace(hit, layout=base.layout, values=base.values, restride=base.restride)
                missing = [w for w in wanted if w.startswith("restride=") and w != "restride=none"] + missing
                missing = list(dict.fromkeys(missing))
        groups = {k: [w.split("=", 1)[1] for w in missing if w.startswith(f"{k}=")]
                  for k in ("layout", "values", "restride")}
        for layout, values, restride in zip_longest(groups["layout"], groups["values"], groups["restride"]):
            change = {k: v for k, v in (("layout", layout), ("values", values), ("restride", restride)) if v is not None}
            if "restride" in change:
                change["restride"] = "" if change["restride"] == "none" else change["restride"]
            case, cfg = dataclasses.replace(base, **change), config
            if "layout" in change and not taken(path, case, cfg, coverage.spec):
                del change["layout"]  # the path is not taken in that layout (its ``taken`` says so): the rest still
                case = dataclasses.replace(base, **change)
            if not taken(path, case, cfg, coverage.spec) or case == base:
                continue
            label = ",".join(f"{k}={v or 'none'}" for k, v in change.items())
            found.append((f"{name}:{label}", case, cfg))
    return found
