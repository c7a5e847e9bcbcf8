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
import itertools
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
    what cost there). The case picks as Hypothesis drew it (``ReferenceLoop.configs_for`` passes that), its restride
    left out: what the suite's own choices add on top of a case (Steer) changes no config it runs, and so no kernel
    variant a GPU compiles for it where a layout keeps Triton's classes."""
    pool = [c for c in config_space(spec, family) if c != dict(primary)]
    if every or not pool:
        return pool
    pick = zlib.crc32(f"{case.dtype};{dataclasses.replace(case, restride='').spec_string()}".encode())
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
        # Passed aligned slices whose re-laid rows had a width divisible by 16 (restride.rows16): the stride's class
        # no other slice of the test may have met.
        self.sliced16 = 0
        self.plain16 = 0  # and passed cases as built with such rows (a launcher's dense path of such widths)
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
            restrided: Sequence[str] = (), rows16: bool = False) -> None:
        for why in not_fitting:
            self.not_fitting[why.split(" (")[0]] += 1
        self.values[case.values] += 1
        self.layouts[case.layout] += 1
        met = case.restride if restrided else ""
        if met:
            self.restrides[met] += 1
        self.sliced16 += met == "aligned_slice" and rows16
        self.plain16 += not case.restride and rows16
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


@dataclasses.dataclass(frozen=True)
class Need:
    """What the search after the draws runs: a value class, layout or restride (``field``, ``value``; restride ""
    for as built) that no passed case met, for the whole test (``path`` None) or with a declared path (a crossing);
    ``rows16``: an aligned slice on rows whose width is divisible by 16 (restride.rows16)."""

    field: str
    value: str
    path: str | None = None
    rows16: bool = False
    rides: bool = False  # met only on a case another need runs: never a case of its own

    def what(self) -> str:
        return f"{self.field}={self.value or 'none'}" + (",width%16=0" if self.rows16 else "")


@dataclasses.dataclass
class Base:
    """A case the planned cases may start from, with the configs they run: a passed case and the configs it ran
    (``ran``: its kernel variants compiled already), or a case searched for, which never ran."""

    case: Case
    configs: list[dict]
    ran: bool = True

    def ident(self) -> tuple[str, tuple[str, ...]]:
        return self.case.spec_string(), tuple(key(c) for c in self.configs)


def unique(bases: Sequence[Base]) -> list[Base]:
    """``bases`` without repeats (the same case and configs), in order."""
    seen: set = set()
    out = []
    for b in bases:
        if b.ident() not in seen:
            seen.add(b.ident())
            out.append(b)
    return out


def crossing_needs(strategy: Any, coverage: Coverage, wanted: Sequence[str]) -> tuple[list[Need], list[Base], set[str]]:
    """Each declared path with each of ``wanted`` ("layout=L", "values=V", "restride=R") no passed case ran it with
    (a path no passed case took has nothing to cross); the takers' cases searched for (below) as bases; and the
    paths whose restrides must run on a case of every dim at least 2. A path whose taker (the least passed case
    that took it, ``_rank``) has a dim of 1 (one row: no row stride read) is searched for in ``strategy`` with every
    dim at least 2, and every restride of ``wanted`` runs there."""
    needs: list[Need] = []
    found: list[Base] = []
    rows: set[str] = set()
    for name, missing in coverage.uncrossed(wanted).items():
        path = next(p for p in coverage.declared if p.name == name)
        base, config = coverage.taker[name]
        if _order(base)[0] and strategy is not None:  # a dim of 1: a strided operand needs rows, searched for
            def takes_rows(c: Case, path: CodePath = path, cfg: dict = config) -> bool:
                return not _order(c)[0] and taken(path, c, cfg, coverage.spec)

            hit = _smallest(strategy, takes_rows)
            if hit is not None:
                found.append(Base(dataclasses.replace(hit, layout=base.layout, values=base.values,
                                                      restride=base.restride), [dict(config)], ran=False))
                rows.add(name)
                missing = [w for w in wanted if w.startswith("restride=") and w != "restride=none"] + missing
                missing = list(dict.fromkeys(missing))
        elif not _order(base)[0]:
            rows.add(name)
        for w in missing:
            field, value = w.split("=", 1)
            needs.append(Need(field, "" if field == "restride" and value == "none" else value, name))
    return needs, found, rows


def plan(coverage: Coverage, needs: Sequence[Need], bases: Sequence[Base], rows: set[str] = frozenset(),
         meets: Any = None) -> tuple[list[tuple[list[str], Case, list[dict]]], list[Need]]:
    """The fewest cases (greedily: the one that meets the most needs first) that meet ``needs``, each a base with at
    most one layout, value class and restride of the needs in place of its own, run with the base's configs: a
    crossing (a need with a path) rides on a case another need runs, and on another path's, wherever that case
    takes its path under one of those configs (a layout under which the path is not taken meets none of its
    needs). A restride of a path in ``rows`` needs every dim at least 2; a need of the whole test's restride (and
    ``rows16``) is met where ``meets(case, need)`` says the case has a tensor it re-lays. A need that ``rides`` is
    met only on a case the others run (of cases meeting as many of those, one meeting it too), never by a case of
    its own. A base that ran is never run again as it is. Returns the cases (their labels: each need of the whole
    test, each path's needs together as PATH:what), and the needs no case meets."""
    by_name = {p.name: p for p in coverage.declared}

    def covers(need: Need, case: Case, configs: Sequence[dict]) -> bool:
        if getattr(case, need.field) != need.value:
            return False
        if need.path is not None:
            if need.field == "restride" and need.value and need.path in rows and _order(case)[0]:
                return False
            return any(taken(by_name[need.path], case, c, coverage.spec) for c in configs)
        return need.field != "restride" or meets is None or bool(meets(case, need))

    out: list[tuple[list[str], Case, list[dict]]] = []
    left = list(needs)
    while any(not n.rides for n in left):
        best: tuple[tuple[int, int], list[Need], Case, list[dict]] | None = None
        for base in bases:
            configs = base.configs
            options = [[None, *dict.fromkeys(n.value for n in left if n.field == f)] for f in FIELDS]
            for chosen in itertools.product(*options):
                change = {f: v for f, v in zip(FIELDS, chosen, strict=True) if v is not None}
                case = dataclasses.replace(base.case, **change)
                if base.ran and case == base.case:
                    continue
                covered = [n for n in left if covers(n, case, configs)]
                score = (sum(not n.rides for n in covered), len(covered))
                if score[0] and (best is None or score > best[0]):
                    best = (score, covered, case, configs)
        if best is None:
            break
        _, covered, case, configs = best
        labels = [n.what() for n in covered if n.path is None]
        for path in dict.fromkeys(n.path for n in covered if n.path is not None):
            labels.append(f"{path}:" + ",".join(n.what() for n in covered if n.path == path))
        out.append((labels, case, configs))
        left = [n for n in left if n not in covered]
    return out, left


FIELDS = ("layout", "values", "restride")


def takers(coverage: Coverage) -> list[Base]:
    """Each declared path's taker (the least passed case that took it, and its config), in the paths' order."""
    return [Base(c, [dict(cfg)]) for c, cfg in (coverage.taker[p.name] for p in coverage.declared
                                                 if p.name in coverage.taker)]


def crossing_cases(strategy: Any, coverage: Coverage, wanted: Sequence[str]) -> list[tuple[str, Case, dict]]:
    """The crossings alone (``crossing_needs``), planned on the paths' takers: each case with its labels joined by
    "; " and its config (a taker's: one)."""
    needs, found, rows = crossing_needs(strategy, coverage, wanted)
    planned, _ = plan(coverage, needs, unique(takers(coverage) + found), rows)
    return [("; ".join(labels), case, configs[0]) for labels, case, configs in planned]


def _rows(spec: KernelSpec, case: Case) -> bool:
    """Whether every dim of ``case`` that is drawn (not fixed to choices: a flag, a head size) is 2 or more: its
    tensors have rows to stride over, broadcast or permute."""
    return all(case.shape[d.name] >= 2 for d in spec.dims if not d.choices and d.name in case.shape)


class Steer:
    """What each drawn case carries besides its shape and seed, chosen as the cases are drawn so that the draws
    themselves meet what the search after them would run (the crossings, the subnormal case, the aligned slice on
    rows of a width divisible by 16), where a drawn case can carry it with nothing of its own lost:

    * its **layout**, where every declared path it takes met its drawn one already: another declared layout that a
      path it takes (in that layout) has not met;
    * its **value class**, likewise: one of the drawn classes a path it takes has not met; or subnormal values
      (``subnormal``: the spec lists none and says not why), once, on a case with rows, whose drawn class the test
      drew before and every path it takes met, drawn in the second half of the draws (``budget``), taking as
      many paths as any case drawn before it and as large as any (where none is, the search runs one on the
      largest passed case, as it did before the draws carried it);
    * its **restride** (suite/checks/restride.py): as ``restride.pick`` (by the case itself, of the restrides that
      would change something: ``restride.Meet``), but one that a path it takes has not met where the pick's has been
      met; the first case with rows of a width divisible by 16 an aligned slice, the second one as built; and the
      first case whose sliced tensors are all of width 1, with rows, an aligned slice (``restride.Meet`` draws no
      other: a stride above 1 is a kernel variant of its own).

    Each choice hangs on the cases drawn before (never on what they did: every part of a split test, drawing the
    same cases, chooses alike), and a case drawn again (Hypothesis's replay of a failure) gets what it got. Off
    (``active`` false: outside the test's own draws, once a case failed, so that shrinking meets Hypothesis's own
    draws) a case gets ``restride.pick``'s restride alone. What the draws still miss, the search runs
    (``plan``)."""

    def __init__(self, spec: KernelSpec, dtype: str, family: str | None, classes: Sequence[str],
                 meet: Any, primary: Any, rows16: Any, subnormal: Any,
                 active: Any, budget: int = 0) -> None:
        self.spec, self.classes, self.meet = spec, list(classes), meet
        self.primary, self.rows16, self.subnormal, self.active = primary, rows16, subnormal, active
        self.declared = [p for p in spec.paths if p.applies_to(dtype, family)]
        self.memo: dict[str, Case] = {}
        self.drawn_as: dict[str, Case] = {}  # a case as chosen -> as Hypothesis drew it (its configs: configs_for)
        self.met: dict[str, set[str]] = {p.name: set() for p in self.declared}
        self.drawn: Counter[str] = Counter()
        self.seen: Counter[str] = Counter()  # path -> the drawn cases that took it
        self.sliced16 = self.plain16 = self.thin_done = False
        self.subnormal_done = subnormal is None
        # the draws' budget; the cases drawn; the most paths one took; the largest (_size)
        self.budget, self.count, self.most, self.biggest = budget, 0, 0, 0

    def __call__(self, case: Case) -> Case:
        from suite.checks import restride

        ident = case.spec_string()
        if ident not in self.memo:
            try:
                self.memo[ident] = self.choose(case) if self.active() else restride.pick(self.spec, case, self.meet)
            except spec_code.SpecRaised:  # a path's ``taken`` raised: the case runs as picked, and says so there
                self.memo[ident] = restride.pick(self.spec, case, self.meet)
            self.drawn_as.setdefault(self.memo[ident].spec_string(), case)
        return self.memo[ident]

    def takes(self, case: Case, config: Mapping[str, Any]) -> list[str]:
        return [p.name for p in self.declared if taken(p, case, config, self.spec)]

    def need(self, paths: Sequence[str], field: str, value: str) -> float:
        """How much a case taking ``paths`` with ``value`` would meet: each path that lacks it, a path the drawn cases
        took seldom counting more (1 / (1 + the cases that took it))."""
        return sum(1 / (1 + self.seen[p]) for p in paths if f"{field}={value}" not in self.met[p])

    def choose(self, case: Case) -> Case:
        from suite.checks import restride

        if case.restride:
            return case
        spec, turn = self.spec, zlib.crc32(f"{case.dtype};{case.spec_string()}".encode())
        config = self.primary(case)
        if not _rows(spec, case):  # a dim of 1: as drawn (the crossings rerun a case of rows where they can too)
            case = restride.pick(spec, case, self.meet)
            if (not self.thin_done and self.meet is not None and self.meet.thin(case)
                    and "aligned_slice" in self.meet.ranks.get(case.layout, ())
                    and all(case.shape[d.name] >= 2 for d in spec.dims
                            if not d.choices and d.name not in self.meet.widths.get(case.layout, ()))):
                self.thin_done = True  # rows of width 1 sliced once: its stride is a kernel variant of its own
                case = dataclasses.replace(case, restride="aligned_slice")
            self.note(case, config, case.restride if case.restride == "aligned_slice" else "none")
            return case
        paths = self.takes(case, config)
        if len(spec.layouts) > 1:  # a layout meets the paths taken in it
            best = (self.need(paths, "layout", case.layout), case, paths)
            for layout in _turned(spec.layouts, turn):
                other = dataclasses.replace(case, layout=layout)
                theirs = self.takes(other, config)
                if (score := self.need(theirs, "layout", layout)) > best[0]:
                    best = (score, other, theirs)
            _, case, paths = best
        own = self.need(paths, "values", case.values)
        if (not self.subnormal_done and not own and self.drawn[case.values] and self.count >= self.budget // 2
                and len(paths) >= self.most and _size(spec, case) >= self.biggest):  # late, the largest yet
            self.subnormal_done = True
            if self.subnormal(dataclasses.replace(case, values="subnormal")):
                case = dataclasses.replace(case, values="subnormal")
        else:
            score, value = max((self.need(paths, "values", v), -i, v) for i, v in enumerate(_turned(self.classes,
                                                                                                    turn)))[::2]
            if score > own:
                case = dataclasses.replace(case, values=value)
        options = ("", *(self.meet.options(spec, case) if self.meet is not None else restride.drawn(spec)))
        choice = options[turn % len(options)]
        wide = ("aligned_slice" in options and not (self.sliced16 and self.plain16)
                and any(v and v % 16 == 0 for v in case.shape.values()) and self.rows16(case))
        if wide and not self.sliced16:
            choice = "aligned_slice"
        elif wide and not self.plain16:
            choice = ""
        else:
            own = self.need(paths, "restride", choice or "none")
            score, other = max((self.need(paths, "restride", r or "none"), -i, r)
                               for i, r in enumerate(_turned(options, turn)))[::2]
            choice = other if score > own else choice
        self.sliced16 |= wide and choice == "aligned_slice"
        self.plain16 |= wide and choice == ""
        if choice:
            case = dataclasses.replace(case, restride=choice)
        self.note(case, config, choice or "none")
        return case

    def note(self, case: Case, config: Mapping[str, Any], met: str) -> None:
        """``case`` as drawn: what each path it takes met, and its value class."""
        paths = self.takes(case, config)
        for p in paths:
            self.met[p].update((f"layout={case.layout}", f"values={case.values}", f"restride={met}"))
            self.seen[p] += 1
        self.drawn[case.values] += 1
        self.count += 1
        self.most = max(self.most, len(paths))
        self.biggest = max(self.biggest, _size(self.spec, case))


def _size(spec: KernelSpec, case: Case) -> int:
    """The product of the case's drawn dims (not those fixed to choices): how large it is, near enough."""
    size = 1
    for d in spec.dims:
        if not d.choices and d.name in case.shape:
            size *= max(case.shape[d.name], 1)
    return size


def _turned(items: Sequence[Any], turn: int) -> list[Any]:
    """``items`` from the one ``turn`` picks on, round to the one before it."""
    items = list(items)
    if not items:
        return items
    k = turn % len(items)
    return items[k:] + items[:k]
