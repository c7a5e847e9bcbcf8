"""Known-issue registry: expected failures keyed by backend, arch, Triton version, kernel, dtype.

Entries are strict: a case that is expected to fail and passes shows as XPASS and
fails the run until its entry is removed, so a fixed bug never hides.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

DEFAULT_PATH = Path(__file__).resolve().parent / "known_issues.json"
FIELDS = {"id": str, "backend": str, "arch": str, "triton": str, "kernel": str, "dtype": str, "reason": str, "link": str}
# Optional: which test functions the entry applies to (glob); the reference test by default.
OPTIONAL = {"test": "test_matches_reference"}
BACKENDS = ("interpret", "cuda", "rocm")


class KnownIssueError(ValueError):
    pass


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

    def matches(self, backend: str, arch: str, triton_version: str, kernel: str, dtype: str,
                test: str = OPTIONAL["test"]) -> bool:
        pairs = ((test, self.test), (backend, self.backend), (arch, self.arch), (kernel, self.kernel), (dtype, self.dtype))
        return (all(fnmatch.fnmatchcase(value, pattern) for value, pattern in pairs)
                and Version(triton_version.split("+")[0]) in SpecifierSet(self.triton or ">=0"))

    def as_record(self) -> dict[str, str]:
        return dict(self.__dict__)


def load(path: Path | str = DEFAULT_PATH) -> list[KnownIssue]:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise KnownIssueError(f"{path}: cannot read known-issue file: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise KnownIssueError(f"{path}: not valid JSON: {exc}") from None
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
        try:
            SpecifierSet(entry["triton"])
        except InvalidSpecifier:
            raise KnownIssueError(f"{where}: field 'triton' is not a version specifier: {entry['triton']!r} (write "
                                  f"e.g. '>=3.0,<4', or '' for every version)") from None
        if not entry["id"].strip():
            raise KnownIssueError(f"{where}: field 'id' is empty; give the entry a unique name")
        if entry["id"] in seen:
            raise KnownIssueError(f"{where}: duplicate id {entry['id']!r} (also known_issues[{seen[entry['id']]}]); "
                                  f"ids must be unique")
        if not fnmatch.filter(BACKENDS, entry["backend"]):
            raise KnownIssueError(f"{where}: field 'backend' {entry['backend']!r} matches none of "
                                  f"{', '.join(BACKENDS)} (a name or a glob such as '*')")
        seen[entry["id"]] = i
        issues.append(KnownIssue(**entry))
    return issues


def check_kernels(issues: list[KnownIssue], kernels: list[str], dtypes: list[str], path: Path | str) -> None:
    """Every entry's kernel and dtype patterns match something registered: an entry that names no kernel (a typo,
    a renamed kernel) would silently expect nothing."""
    for i, issue in enumerate(issues):
        where = f"{path}: known_issues[{i}] ({issue.id!r})"
        if not fnmatch.filter(kernels, issue.kernel):
            raise KnownIssueError(f"{where}: field 'kernel' {issue.kernel!r} matches no registered kernel; registered: "
                                  f"{', '.join(sorted(kernels))}")
        if not fnmatch.filter(dtypes, issue.dtype):
            raise KnownIssueError(f"{where}: field 'dtype' {issue.dtype!r} matches no dtype; dtypes: {', '.join(dtypes)}")


def find(issues: list[KnownIssue], backend: str, arch: str, triton_version: str, kernel: str,
         dtype: str, test: str = OPTIONAL["test"]) -> KnownIssue | None:
    return next((k for k in issues if k.matches(backend, arch, triton_version, kernel, dtype, test)), None)
