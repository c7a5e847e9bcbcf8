"""Known-issue registry: expected failures keyed by backend, arch, Triton version, kernel, dtype.

Entries come from the known-issue file (``--known-issues``, JSON) and from kernel modules
(``KernelSpec.known_issues``, shipped with the kernel they describe); both are checked the same
way and their ids must be unique across the two. A test its entry expects to fail that passes (no case of
the run met the issue) is "not met in this run", named in the verdict; with --strict-known-issues it fails the run
as XPASS(strict), to be told when a bug is fixed.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

# no torch: an xdist controller loads this before torch
from kernels._validation import pattern_matches_anything, pattern_problem, triton_specifier_problem
from suite.session import reading

# The ordinary wrong values of a problem's own case (suite/checks/ordinary.py: beside).
Ordinary = Callable[[str], Iterable[str]]
DEFAULT_PATH = Path(__file__).resolve().parents[1] / "known_issues.json"
MOST_BYTES = 16 * 2**20  # the shipped file is 3 KiB
FIELDS = {"id": str, "backend": str, "arch": str, "triton": str, "kernel": str, "dtype": str, "reason": str, "link": str}
# Optional: which test functions the entry applies to (glob), the reference test by default. What fails
# (failure_pattern, a regular expression searched for in the failure's message) is required in effect: '' (its
# default) or any pattern that matches the empty string would match every failure, and is refused.
OPTIONAL = {"test": "test_matches_reference", "failure_pattern": ""}
# Names no two kernels share: a kernel pattern that matches both matches any kernel (a wildcard), and is refused.
ANY_KERNEL = ("x", "zz_any_kernel_9")


# A kernel pattern with wildcards keeps at least this many characters of a name in a row ('liger_*', '*_add').
LEAST_KEPT = 3


def name_kept(pattern: str) -> str | None:
    """The longest run of plain characters in a kernel glob ('liger_' of 'liger_*'; '' of '[!v]*'), or None where
    ``pattern`` has no wildcard (a name)."""
    if not any(c in pattern for c in "*?["):
        return None
    plain = re.split(r"[*?]", re.sub(r"\[!?\]?[^\]]*\]", "*", pattern))
    return max(plain, key=len)


class KnownIssueError(ValueError):
    pass


class KnownIssueFailure(Exception):  # noqa: N818 - it names the outcome
    """A test's failures were all of the kind its known issue describes: the test is expected to fail (xfail)."""


def problems_of(exc: BaseException) -> list[str]:
    """Each problem a test's failure holds, as a known issue's pattern is matched against them one by one: the
    ``problems`` a failure carries (suite/checks/caseloop.py: fail; a property's what and detail, without the
    reproduction line and notes), each failure of a group of them (Hypothesis's distinct failures), else its whole
    text as one."""
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, (tuple, list)) and inner and all(isinstance(e, BaseException) for e in inner):
        return [p for e in inner for p in problems_of(e)]
    found = getattr(exc, "problems", None)
    return list(found) if found else [str(exc)]


@dataclass(frozen=True)
class KnownIssue:
    id: str
    backend: str
    arch: str
    triton: str
    kernel: str
    dtype: str
    reason: str
    link: str
    test: str = OPTIONAL["test"]
    source: str = ""  # where the entry was declared: the known-issue file, or the kernel's module
    failure_pattern: str = OPTIONAL["failure_pattern"]  # what fails: a regular expression ('': any failure)

    def covers(self, message: str) -> bool:
        """Whether a failure with this message is the one the entry describes; any other failure of its kernel and
        dtype fails the run."""
        return not self.failure_pattern or re.search(self.failure_pattern, message) is not None

    def covers_all(self, problems: list[str], ordinary: Ordinary | None = None) -> bool:
        """Whether every problem of a failing case (CaseResult.problems: each output's each problem) is one the
        entry describes: a case with one described problem and one undescribed is not the known issue's.
        ``ordinary``: the ordinary wrong values of a problem's own case (suite/checks/ordinary.py: beside); a
        pattern found in one of those describes the case, not the problem (a dim, a seed of its line)."""
        return bool(problems) and all(self.describes(p, ordinary) for p in problems)

    def describes(self, problem: str, ordinary: Ordinary | None = None) -> bool:
        """Whether the entry describes ``problem``: its pattern found there, and in no ordinary wrong value of the
        same case (``ordinary``)."""
        return self.covers(problem) and not (ordinary is not None and any(self.covers(o) for o in ordinary(problem)))

    def matches(self, backend: str, arch: str, triton_version: str, kernel: str, dtype: str,
                test: str = OPTIONAL["test"]) -> bool:
        pairs = ((test, self.test), (backend, self.backend), (arch, self.arch), (kernel, self.kernel), (dtype, self.dtype))
        return (all(fnmatch.fnmatchcase(value, pattern) for value, pattern in pairs)
                and SpecifierSet(self.triton or ">=0").contains(Version(triton_version.split("+")[0]), prereleases=True))

    def as_record(self) -> dict[str, str]:
        return dict(self.__dict__)


def load(path: Path | str = DEFAULT_PATH) -> list[KnownIssue]:
    path = Path(path)
    try:
        data = json.loads(reading.read_regular(path, MOST_BYTES).decode("utf-8"))
    except reading.NotAFile as exc:  # a FIFO waited for ever, /dev/zero was read until the process was killed
        raise KnownIssueError(f"{path}: not a known-issue file: {exc}") from None
    except UnicodeDecodeError:
        raise KnownIssueError(f"{path}: not a known-issue file: not UTF-8 text") from None
    except OSError as exc:
        raise KnownIssueError(f"{path}: cannot read known-issue file: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise KnownIssueError(f"{path}: not valid JSON: {exc}") from None
    except RecursionError:
        raise KnownIssueError(f"{path}: nested too deeply to read; not a known-issue file") from None
    entries = data.get("known_issues") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise KnownIssueError(f"{path}: expected an object with a list 'known_issues'")
    issues, seen = [], {}
    for i, entry in enumerate(entries):
        where = f"{path}: known_issues[{i}]"
        if not isinstance(entry, dict):
            raise KnownIssueError(f"{where}: expected an object")
        for name, typ in FIELDS.items():
            if not isinstance(entry.get(name), typ):
                raise KnownIssueError(f"{where}: field {name!r} must be a string, got {entry.get(name)!r}")
        unknown = set(entry) - set(FIELDS) - set(OPTIONAL)
        if unknown:
            allowed = sorted(FIELDS) + sorted(OPTIONAL)
            raise KnownIssueError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {allowed}")
        if not isinstance(entry.get("test", ""), str):
            raise KnownIssueError(f"{where}: field 'test' must be a string (a test function name or glob)")
        if problem := pattern_problem(entry.get("failure_pattern", "")):
            raise KnownIssueError(f"{where}: field 'failure_pattern' {problem}")
        if problem := pattern_matches_anything(entry.get("failure_pattern", "")):
            raise KnownIssueError(f"{where} ({entry.get('id')!r}): field 'failure_pattern' "
                                  f"{'is missing or empty' if not entry.get('failure_pattern') else problem.split(',')[0]}"
                                  f": it would match every failure; give a regular expression of what fails, from "
                                  f"the failure's message")
        if all(fnmatch.fnmatchcase(name, entry["kernel"]) for name in ANY_KERNEL):
            raise KnownIssueError(f"{where} ({entry.get('id')!r}): field 'kernel' {entry['kernel']!r} matches any "
                                  f"kernel: name the kernel (or a pattern of the kernels) the issue is about")
        if (kept := name_kept(entry["kernel"])) is not None and len(kept) < LEAST_KEPT:
            raise KnownIssueError(f"{where} ({entry.get('id')!r}): field 'kernel' {entry['kernel']!r} keeps "
                                  f"{'no' if not kept else len(kept)} character{'' if len(kept) == 1 else 's'} of a "
                                  f"name in a row ({kept!r}), so it matches kernels of any name ('*_*' matches most): "
                                  f"a pattern of kernels keeps at least {LEAST_KEPT} characters of their name in a "
                                  f"row, e.g. 'liger_*' or '*_add'")
        if problem := triton_specifier_problem(entry["triton"]):
            raise KnownIssueError(f"{where}: field 'triton' {problem}")
        if not entry["id"].strip():
            raise KnownIssueError(f"{where}: field 'id' is empty; give the entry a unique name")
        if entry["id"] in seen:
            raise KnownIssueError(f"{where}: duplicate id {entry['id']!r} (also known_issues[{seen[entry['id']]}]); "
                                  f"ids must be unique")
        from kernels.spec import BACKENDS

        if not fnmatch.filter(BACKENDS, entry["backend"]):
            raise KnownIssueError(f"{where}: field 'backend' {entry['backend']!r} matches none of "
                                  f"{', '.join(BACKENDS)} (a name or a glob such as '*')")
        seen[entry["id"]] = i
        issues.append(KnownIssue(**entry, source=str(path)))
    return issues


def from_specs(specs: list, where: dict[str, str] | None = None) -> list[KnownIssue]:
    """The known issues kernel modules declare (``KernelSpec.known_issues``; checked when the spec was made), as
    registry entries of their kernel. ``where``: kernel name -> the module that registered it."""
    where = where or {}
    return [KnownIssue(id=k.id, backend=k.backend, arch=k.arch, triton=k.triton, kernel=spec.name, dtype=k.dtype,
                       reason=k.reason, link=k.link, test=k.test, source=where.get(spec.name, spec.name),
                       failure_pattern=k.failure_pattern)
            for spec in specs for k in spec.known_issues]


def check_unique(issues: list[KnownIssue]) -> None:
    """Ids are unique across the known-issue file and the kernel modules: a result names its entry by id."""
    seen: dict[str, KnownIssue] = {}
    for issue in issues:
        if issue.id in seen:
            raise KnownIssueError(f"known issue id {issue.id!r} is declared twice: in {seen[issue.id].source} and in "
                                  f"{issue.source}; ids must be unique")
        seen[issue.id] = issue


def check_kernels(issues: list[KnownIssue], kernels: list[str], dtypes: list[str], path: Path | str) -> None:
    """Every entry's kernel and dtype patterns match something registered: an entry that names no kernel (a typo,
    a renamed kernel) would silently expect nothing; and a kernel pattern does not match every registered kernel
    ('?*?': the loaded entry's check refuses only what matches any name)."""
    for i, issue in enumerate(issues):
        where = f"{path}: known_issues[{i}] ({issue.id!r})"
        if not fnmatch.filter(kernels, issue.kernel):
            raise KnownIssueError(f"{where}: field 'kernel' {issue.kernel!r} matches no registered kernel; registered: "
                                  f"{', '.join(sorted(kernels))}")
        if not fnmatch.filter(dtypes, issue.dtype):
            raise KnownIssueError(f"{where}: field 'dtype' {issue.dtype!r} matches no dtype; dtypes: {', '.join(dtypes)}")
        if len(kernels) > 1 and issue.kernel not in kernels and len(fnmatch.filter(kernels, issue.kernel)) == len(kernels):
            raise KnownIssueError(f"{where}: field 'kernel' {issue.kernel!r} matches every registered kernel (all "
                                  f"{len(kernels)}): name the kernel (or a pattern of the kernels) the issue is about")


@dataclass(frozen=True)
class KnownIssueGroup:
    """Several known issues of one kernel x dtype x test (each its own failure_pattern: a kernel may have two
    bugs, or a library one bug and the interpreter another), read as one: a failure any of them describes is
    expected; any other fails the run. It reads as a :class:`KnownIssue` does: its id, link and reason name every
    entry ('a + b'), its failure_pattern is every pattern."""

    issues: tuple[KnownIssue, ...]

    @property
    def id(self) -> str:  # noqa: A003 - the name KnownIssue gives it
        return " + ".join(k.id for k in self.issues)

    @property
    def link(self) -> str:
        return " ; ".join(dict.fromkeys(k.link for k in self.issues))

    @property
    def reason(self) -> str:
        return " ".join(f"[{k.id}] {k.reason}" for k in self.issues)

    @property
    def failure_pattern(self) -> str:
        return " | ".join(f"{k.id}: {k.failure_pattern or '(any failure)'}" for k in self.issues)

    def covers(self, message: str) -> bool:
        return any(k.covers(message) for k in self.issues)

    def covers_all(self, problems: list[str], ordinary: Ordinary | None = None) -> bool:
        """Every problem described by one of the entries (each by any of them; ``ordinary`` as for KnownIssue)."""
        return bool(problems) and all(any(k.describes(p, ordinary) for k in self.issues) for p in problems)

    def which(self, message: str) -> KnownIssue | None:
        """The first entry that describes a failure with this message."""
        return next((k for k in self.issues if k.covers(message)), None)

    def as_record(self) -> dict[str, str]:
        first = self.issues[0].as_record()
        return {**first, "id": self.id, "reason": self.reason, "link": self.link, "failure_pattern": self.failure_pattern,
                "source": " ; ".join(dict.fromkeys(k.source for k in self.issues))}


def find(issues: list[KnownIssue], backend: str, arch: str, triton_version: str, kernel: str,
         dtype: str, test: str = OPTIONAL["test"]) -> KnownIssue | KnownIssueGroup | None:
    """The known issue of a kernel x dtype x test; every one where several match (a :class:`KnownIssueGroup`)."""
    found = tuple(k for k in issues if k.matches(backend, arch, triton_version, kernel, dtype, test))
    return None if not found else found[0] if len(found) == 1 else KnownIssueGroup(found)


def first_each(issue: KnownIssue | KnownIssueGroup | None, failures: list[tuple[dict, str]]) -> list[dict]:
    """Of the failures a test's known issue covered ((case record, message) in the order they failed), the record of
    the first that each of its entries describes: one for a single entry, one per entry of a group."""
    if not isinstance(issue, KnownIssueGroup):
        return [rec for rec, _ in failures[:1]]
    seen: set[str] = set()
    out = []
    for rec, text in failures:
        which = issue.which(text)
        if which is not None and which.id not in seen:
            seen.add(which.id)
            out.append(rec)
    return out
